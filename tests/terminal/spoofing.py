"""Terminal spoofing (issue 24, item 1): untrusted text shown by reins at a terminal cannot steer it.

The real `reins` runs under a pseudo-terminal against the scripted model server, and everything
it writes goes through a terminal emulator (pyte), one screen for the whole test as a person's
terminal would be. The assertions are about what a person reads on that screen: a command hidden
behind `ESC[2K ESC[1A` in the approval prompt is there to read, the model's `ESC[2J` clears
nothing, its OSC 52 and OSC 0 set neither the clipboard nor the title, and a session's title and
tree show their escapes instead of obeying them.

Needs REINS_BIN, SCRIPTED_LLM_BIN and the PyPI package pyte (scripts/test installs it).
"""

import json
import os
import pty
import select
import subprocess
import sys
import tempfile
import time
import unittest

import pyte

REINS = os.environ["REINS_BIN"]
SCRIPTED_LLM = os.environ["SCRIPTED_LLM_BIN"]
ESC = "\x1b"

# A command that hides itself: erase the line, go up, and draw reins's own look over it.
HIDDEN = f"rm -f important.txt #{ESC}[2K{ESC}[1A{ESC}[2K\r● bash $ ls -la"
# An answer that clears the screen, writes the clipboard and sets the title.
ANSWER = f"Done.{ESC}[2J{ESC}[H{ESC}]52;c;cm0gLXJmIH4K\x07{ESC}]0;pwned\x07 All clear."
# A path that clears the screen when shown.
PATH = f"nope{ESC}[2J{ESC}]0;pwned-too\x07.txt"
PROMPT = f"tidy up{ESC}[2J{ESC}[3J"


class Terminal:
    """One emulated terminal that every command of the test writes to."""

    def __init__(self):
        self.screen = pyte.Screen(160, 200)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""

    def text(self):
        return "\n".join(line.rstrip() for line in self.screen.display if line.strip())

    def run(self, args, cwd, env, answers=(), timeout=60):
        """Runs `reins ARGS` with the pty as its controlling terminal; answers each prompt (a
        pair of what appears on the screen and what to type) once it shows. Returns the exit
        status and the screen at each answer."""
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(cwd)
            os.execve(REINS, [REINS, *args], env)
        answers, seen = list(answers), []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if answers and answers[0][0] in self.text():
                seen.append(self.text())
                os.write(fd, answers.pop(0)[1].encode())
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.raw += chunk
            self.stream.feed(chunk)
        else:
            os.kill(pid, 9)
            raise AssertionError(f"reins {args[0]} did not finish in {timeout} s; the screen:\n{self.text()}")
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return os.waitstatus_to_exitcode(status), seen


class Spoofing(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="reins-spoofing-")
        self.workspace = os.path.join(self.dir.name, "w")
        os.mkdir(self.workspace)
        with open(os.path.join(self.workspace, "important.txt"), "w") as f:
            f.write("keep me\n")
        script = os.path.join(self.dir.name, "script.json")
        replies = [
            {"toolCalls": [{"name": "read", "arguments": {"path": PATH}}]},
            {"toolCalls": [{"name": "bash", "arguments": {"command": HIDDEN}}]},
            {"text": ANSWER, "chunkChars": 7},
        ]
        with open(script, "w") as f:
            json.dump(replies, f)
        self.llm = subprocess.Popen([SCRIPTED_LLM, "--script", script], stdout=subprocess.PIPE)
        base_url = self.llm.stdout.readline().decode().strip()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.workspace,
            "REINS_HOME": os.path.join(self.dir.name, "reins-home"),
            "OPENAI_API_KEY": "sk-not-a-key",
            "OPENAI_BASE_URL": base_url,
            "REINS_MODEL": "scripted-model",
            "TERM": "xterm-256color",
        }
        self.terminal = Terminal()

    def tearDown(self):
        self.llm.kill()
        self.llm.wait()
        self.llm.stdout.close()
        self.dir.cleanup()

    def reins(self, *args, answers=()):
        return self.terminal.run(list(args), self.workspace, self.env, answers)

    def test_what_reins_shows_cannot_steer_the_terminal(self):
        status, seen = self.reins(
            "run", PROMPT, answers=[("Run it? [y/N]", "n\n"), ("Reason for the model", "\n")]
        )
        self.assertEqual(len(seen), 2, f"no approval prompt; the screen:\n{self.terminal.text()}")
        at_prompt = seen[0]
        # The command as it will run, erasing escapes and all, right above the question.
        self.assertIn("$ rm -f important.txt #^[[2K^[[1A^[[2K^M● bash $ ls -la", at_prompt)
        self.assertEqual(status, 0, self.terminal.text())
        self.assertTrue(os.path.exists(os.path.join(self.workspace, "important.txt")))

        screen = self.terminal.text()
        # The answer cleared nothing: the prompt and the tool calls are still on the screen.
        self.assertIn("rm -f important.txt", screen)
        self.assertIn("● read nope^[[2J^[]0;pwned-too^G.txt", screen)
        self.assertIn("Done.^[[2J^[[H^[]52;c;cm0gLXJmIH4K^G^[]0;pwned^G All clear.", screen)
        self.assertEqual(self.terminal.screen.title, "")
        self.assertNotIn(b"\x1b]52", self.terminal.raw)
        self.assertNotIn(b"\x1b]0;", self.terminal.raw)

        # The session's title (its first message) and its tree show the escapes too.
        status, _ = self.reins("sessions", "list")
        self.assertEqual(status, 0, self.terminal.text())
        self.assertIn("tidy up^[[2J^[[3J", self.terminal.text())
        status, _ = self.reins("sessions", "tree")
        self.assertEqual(status, 0, self.terminal.text())
        screen = self.terminal.text()
        self.assertIn("rm -f important.txt", screen)
        self.assertIn("Done.^[[2J", screen)
        # Only reins's own colours reached the terminal: no sequence but SGR.
        self.assertEqual(foreign_sequences(self.terminal.raw), [])
        if os.environ.get("SHOW_SCREEN"):
            print(self.terminal.text())


def foreign_sequences(raw):
    """The escape sequences in `raw` other than SGR colours (`ESC[...m`)."""
    found, at = [], raw.find(b"\x1b")
    while at != -1:
        end = at + 1
        if raw[end:end + 1] == b"[":
            end += 1
            while end < len(raw) and raw[end] in b"0123456789;":
                end += 1
            if raw[end:end + 1] != b"m":
                found.append(raw[at:end + 1])
        else:
            found.append(raw[at:at + 2])
        at = raw.find(b"\x1b", end)
    return found


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
