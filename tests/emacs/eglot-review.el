;;; eglot-review.el --- reviewing an agent edit in eglot, with reins.el  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-review.el
;;
;; The model edits two lines of a Python file.  The proposal shows as two diagnostics; the user
;; types a line above them and the diagnostics move with the text; on the second hunk's line the
;; code actions say what accepting only it does, and picking that applies exactly that hunk
;; through `workspace/applyEdit' (without asking again), clears the diagnostics, and says in
;; *reins* and the echo area that the other hunk was rejected.  As `reins-test-load-reins' sets
;; Emacs up, the server's `workspace/applyEdit' arrives in the same read as the answer to the
;; accept; then a held command is accepted with M-x reins-accept.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-text "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")

(defun reins-test-diagnostic-lines ()
  "The lines (from 0) of reins's diagnostics in the current buffer, as eglot has them."
  (sort (cl-loop for diag in eglot--diagnostics
                 for lsp = (cdr (assoc 'eglot-lsp-diag (eglot--diag-data diag)))
                 when (equal (plist-get lsp :source) "reins")
                 collect (plist-get (plist-get (plist-get lsp :range) :start) :line))
        #'<))

(let* ((dir (reins-test-setup
             (vector
              `((toolCalls . ,(vector `((id . "call_1") (name . "edit")
                                        (arguments . ((path . "add.py")
                                                      (edits . ,(vector '((oldText . "    return a + b")
                                                                          (newText . "    return b + a"))
                                                                        '((oldText . "    return a - b")
                                                                          (newText . "    return -(b - a)"))))))))))
              `((toolCalls . ,(vector '((id . "call_2") (name . "bash") (arguments . ((command . "echo checked")))))))
              '((text . "Kept the change to sub only.")))
             `(("add.py" . ,reins-test-text))))
       (file (expand-file-name "add.py" dir)))
  (reins-test-load-reins)
  (let ((server (reins-test-connect file))
        (messages nil))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command "reins.chat.send" :arguments (vector (list :text "Make the order explicit."))))
    (reins-test-wait "the proposal (edit_proposed)" (lambda () (reins-test-event "edit_proposed")))
    (reins-test-wait "its diagnostics" (lambda () (equal (reins-test-diagnostic-lines) '(1 5))))
    (when (string-match-p "b \\+ a" (buffer-string))
      (reins-test-fail "the buffer changed before the edit was accepted"))

    ;; The user types a line at the top: the diagnostics follow the text.
    (goto-char (point-min))
    (insert "# the arithmetic\n")
    (eglot--signal-textDocument/didChange)
    (reins-test-wait "the diagnostics to move down a line"
                     (lambda () (equal (reins-test-diagnostic-lines) '(2 6))))

    ;; On the second hunk's line: accepting only it says that the other goes.
    (goto-char (point-min))
    (forward-line 6)
    (advice-add 'message :before (lambda (format-string &rest args)
                                   (when format-string (push (apply #'format format-string args) messages))))
    (progn
      (let ((titles (reins-test-pick "Accept only hunk 2 of 2 (reject the other)")))
        (unless (equal (cl-subseq titles 0 3)
                       '("Accept agent edit" "Accept only hunk 2 of 2 (reject the other)" "Reject agent edit"))
          (reins-test-fail "the code actions were %S" titles)))
      (reins-test-wait "the buffer to change (workspace/applyEdit)"
                       (lambda () (string-match-p "return -(b - a)" (buffer-string)))))
    ;; Then a command: no lines to put code actions on; M-x reins-accept, as *reins* says.
    (reins-test-wait "the command's proposal"
                     (lambda () (reins-test-shows (regexp-quote "⏸ run `echo checked`? M-x reins-accept"))))
    (reins-accept)
    (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
    (unless (equal (buffer-string) (concat "# the arithmetic\n"
                                           (replace-regexp-in-string "a - b" "-(b - a)" reins-test-text)))
      (reins-test-fail "the buffer reads %S" (buffer-string)))
    (reins-test-wait "the diagnostics to clear" (lambda () (null (reins-test-diagnostic-lines))))
    (let ((said "edit e1: applied hunk 2 of 2; the other hunk was rejected"))
      (unless (cl-some (lambda (m) (string-match-p (regexp-quote said) m)) messages)
        (reins-test-fail "the echo area did not say %S: %S" said messages))
      (unless (reins-test-shows (regexp-quote said))
        (reins-test-fail "*reins* did not say %S" said)))
    (let ((resolved (plist-get (cl-find-if (lambda (params) (equal (plist-get (plist-get params :event) :id) "e1"))
                                           reins-test-events)
                               :event))
          (end (plist-get (reins-test-event "agent_end") :event)))
      (unless (equal (plist-get resolved :outcome) "partially_applied")
        (reins-test-fail "the edit was resolved as %S" resolved))
      (unless (equal (plist-get end :reason) "final_answer")
        (reins-test-fail "the run ended with %S: %S" (plist-get end :reason) (plist-get end :error))))
    ;; Nothing is offered on the first hunk's line any more.
    (goto-char (point-min))
    (forward-line 2)
    (let ((titles (mapcar (lambda (a) (plist-get a :title))
                          (eglot-code-actions (line-beginning-position) (line-end-position) nil nil))))
      (when (cl-some (lambda (title) (string-match-p "hunk\\|agent edit" title)) titles)
        (reins-test-fail "review actions are still offered on a decided edit: %S" titles)))
    (eglot-shutdown server))
  (reins-test-pass "eglot applied hunk 2 alone, said the other was rejected, and the diagnostics followed"))
