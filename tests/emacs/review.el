;;; review.el --- review of any subset of an edit's hunks, in *reins review*  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/review.el
;;
;; The model edits three functions of a file in one edit.  *reins review* shows itself with the
;; three hunks, each as the line above it and the lines it removes and adds, all marked to be
;; accepted.  The user turns
;; hunk 2 to reject (SPC), applies (C-c C-c) giving a reason: hunks 1 and 3 land in the buffer
;; (unsaved; one undo takes them back), hunk 2 does not, and the model is told so, in the
;; numbering the user saw, with the reason.  Then a command is run from the same buffer.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-text
  "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")

(defun reins-test-review-shows (regexp)
  (let ((buffer (get-buffer "*reins review*")))
    (and buffer (with-current-buffer buffer (string-match-p regexp (buffer-string))))))

(let* ((dir (reins-test-setup
             (vector
              `((toolCalls . ,(vector `((id . "call_1") (name . "edit")
                                        (arguments . ((path . "calc.py")
                                                      (edits . ,(vector '((oldText . "    return a + b") (newText . "    return b + a"))
                                                                        '((oldText . "    return a - b") (newText . "    return -(b - a)"))
                                                                        '((oldText . "    return a * b") (newText . "    return b * a"))))))))))
              `((toolCalls . ,(vector '((id . "call_2") (name . "bash") (arguments . ((command . "echo checked")))))))
              '((text . "Kept add and mul.")))
             `(("calc.py" . ,reins-test-text))))
       (file (expand-file-name "calc.py" dir)))
  (reins-test-load-reins-el)
  (find-file file)
  (python-mode)
  (reins-chat)
  (reins-test-type-and-send "Make the order explicit.")
  (reins-test-wait "the review buffer" (lambda () (reins-test-review-shows "hunk 3 of 3")))
  (unless (get-buffer-window "*reins review*" t) (reins-test-fail "*reins review* was not shown"))
  (with-current-buffer "*reins review*"
    (dolist (shown '("e1 · edit calc.py · 3 hunks"
                     "  [x] accept hunk 1 of 3 · line 2\n   def add(a, b):\n  -    return a + b\n  +    return b + a\n"
                     "  [x] accept hunk 2 of 3 · line 6\n   def sub(a, b):\n  -    return a - b\n  +    return -(b - a)\n"
                     "  [x] accept hunk 3 of 3 · line 10\n"))
      (unless (string-match-p (regexp-quote shown) (buffer-string))
        (reins-test-fail "*reins review* does not show %S:\n%s" shown (buffer-string))))
    ;; Point starts on the first hunk; n moves to the second, SPC turns it to reject.
    (call-interactively (key-binding (kbd "n")))
    (call-interactively (key-binding (kbd "SPC")))
    (unless (string-match-p (regexp-quote "  [ ] reject hunk 2 of 3") (buffer-string))
      (reins-test-fail "SPC did not turn hunk 2 to reject:\n%s" (buffer-string)))
    (when (string-match-p (regexp-quote "[ ] reject hunk 1") (buffer-string))
      (reins-test-fail "SPC turned the wrong hunk:\n%s" (buffer-string)))
    (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "keep sub as it is")))
      (call-interactively (key-binding (kbd "C-c C-c")))))
  (reins-test-wait "hunks 1 and 3 in the buffer"
                   (lambda () (with-current-buffer (find-buffer-visiting file)
                                (string-match-p "b \\* a" (buffer-string)))))
  (with-current-buffer (find-buffer-visiting file)
    (let ((want (replace-regexp-in-string "a \\* b" "b * a" (replace-regexp-in-string "a \\+ b" "b + a" reins-test-text))))
      (unless (equal (buffer-string) want)
        (reins-test-fail "the buffer reads %S" (buffer-string))))
    (unless (buffer-modified-p) (reins-test-fail "the edit was saved behind the user's back")))
  (reins-test-wait "the chat to say what was applied"
                   (lambda () (reins-test-chat-shows (regexp-quote "✓ edit calc.py: applied hunks 1, 3 of 3; the other hunk was rejected (keep sub as it is)"))))
  ;; The command, from the same buffer.
  (reins-test-wait "the command's proposal" (lambda () (reins-test-review-shows "run `echo checked`")))
  (when (reins-test-review-shows "hunk 1 of 3") (reins-test-fail "the decided edit is still shown"))
  (with-current-buffer "*reins review*"
    (goto-char (point-min))
    (call-interactively (key-binding (kbd "n")))
    (call-interactively (key-binding (kbd "C-c C-c"))))
  (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
  (let ((results (reins-test-tool-results)))
    (unless (string-match-p "hunks 1, 3\\|hunks 1 and 3" (car results))
      (reins-test-fail "the model was not told which hunks applied: %S" (car results)))
    (unless (string-match-p "keep sub as it is" (car results))
      (reins-test-fail "the model was not told the reason: %S" (car results)))
    (unless (string-match-p "checked" (cadr results))
      (reins-test-fail "the command did not run: %S" (cadr results))))
  (unless (reins-test-review-shows "Nothing waits for your review") (reins-test-fail "the review buffer still lists proposals"))
  ;; One undo takes the edit back.
  (with-current-buffer (find-buffer-visiting file)
    (undo-boundary)
    (let ((last-command nil)) (undo))
    (unless (equal (buffer-string) reins-test-text)
      (reins-test-fail "one undo left %S" (buffer-string))))
  (reins-test-pass "hunks 1 and 3 of 3 applied from *reins review*, hunk 2 rejected with its reason, and a command run"))
