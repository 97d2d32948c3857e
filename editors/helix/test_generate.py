"""Tests of generate.py: reins is added after each language's servers, Helix's or the user's.

    python3 -m unittest discover -s editors/helix
"""

import tomllib
import unittest

import generate

HELIX = """
[[language]]
name = "rust"
language-servers = ["rust-analyzer"]

[[language]]
name = "erlang"
language-servers = [{ name = "erlang-ls", except-features = ["document-symbols"] }, "elp"]

[[language]]
name = "markdown"
"""

USER = """
[[language]]
name = "rust"
language-servers = ["my-rust-server", { name = "rust-analyzer", only-features = ["format"] }]
auto-format = true
"""


def servers(text):
    return {lang["name"]: lang["language-servers"] for lang in tomllib.loads(text)["language"]}


class Generate(unittest.TestCase):
    def test_every_language_keeps_its_servers_and_gets_reins_last(self):
        out = generate.generate(HELIX, "a test")
        self.assertEqual(
            servers(out),
            {
                "rust": ["rust-analyzer", "reins"],
                "erlang": [{"name": "erlang-ls", "except-features": ["document-symbols"]}, "elp", "reins"],
                "markdown": ["reins"],
            },
        )
        config = tomllib.loads(out)["language-server"]["reins"]
        self.assertEqual(config, {"command": "reins", "args": ["lsp"]}, "no model or other setting is imposed")

    def test_the_users_servers_win_and_reins_is_not_added_twice(self):
        out = generate.generate(HELIX, "a test", USER)
        self.assertEqual(
            servers(out)["rust"],
            ["my-rust-server", {"name": "rust-analyzer", "only-features": ["format"]}, "reins"],
        )
        again = generate.generate(out, "a test")
        self.assertEqual(servers(again), servers(out))


if __name__ == "__main__":
    unittest.main()
