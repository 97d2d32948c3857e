;;; eglot-typing.el --- an agent edit arrives while the user types, in eglot  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-typing.el
;;
;; With `approval.edit = "auto"', the model edits a line while the user types at the top of the
;; file, 20 insertions a second.  eglot holds its `didChange' until the user pauses
;; (`eglot-send-changes-idle-time'), so the edit reaches it made for an older version: eglot
;; refuses it ("Edits on … require version"; Emacs 30's eglot, which counts versions only as it
;; sends them, refuses it once reins.el has sent the typing first), and once the user pauses and the change reaches
;; reins, the edit is re-based onto the typed text and sent again.  Nothing typed is lost, the
;; agent's line is where it belongs, and the model is told "Edited".

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-text "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")

(let* ((dir (reins-test-setup
             (vector
              `((delayMs . 300)
                (toolCalls . ,(vector `((id . "call_1") (name . "edit")
                                        (arguments . ((path . "add.py")
                                                      (edits . ,(vector '((oldText . "    return a - b")
                                                                          (newText . "    return -(b - a)"))))))))))
              '((text . "Done.")))
             `(("add.py" . ,reins-test-text))))
       (file (expand-file-name "add.py" dir))
       (typed nil)
       (typist nil))
  (reins-test-load-reins)
  (setq reins-initialization-options '(:approval (:edit "auto")))
  (let ((server (reins-test-connect file))
        (buffer (current-buffer)))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command "reins.chat.send" :arguments (vector (list :text "Negate sub."))))
    ;; The typist: a token at the top, 20 a second, until the edit was refused once.
    (setq typist (run-at-time 0 0.05 (lambda ()
                                       (with-current-buffer buffer
                                         (let ((token (format "#t%d\n" (length typed))))
                                           (save-excursion (goto-char (point-min)) (insert token))
                                           (push token typed))))))
    (reins-test-wait "an edit made for an older version to reach eglot"
                     (lambda () (> (length typed) 20)))
    (cancel-timer typist)
    ;; The user pauses: eglot's idle timer sends what was typed (batch Emacs is never idle).
    (with-current-buffer buffer (eglot--signal-textDocument/didChange))
    (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
    (with-current-buffer buffer
      (dolist (token typed)
        (unless (string-match-p (regexp-quote token) (buffer-string))
          (reins-test-fail "the typed %S is gone: %S" token (buffer-string))))
      (unless (string-suffix-p (replace-regexp-in-string "a - b" "-(b - a)" reins-test-text) (buffer-string))
        (reins-test-fail "the agent's line is not where it belongs: %S" (buffer-string))))
    (let ((ended (reins-test-event "tool_execution_end")))
      (when (eq (plist-get (plist-get ended :event) :isError) t)
        (reins-test-fail "the edit was reported as failed: %S" ended)))
    (reins-test-pass "an edit refused for an older version is re-based onto the typing and lands")))
