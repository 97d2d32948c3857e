;;; eglot-comments.el --- commenting on an agent's hunks in eglot, with reins.el  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-comments.el
;;
;; The model renames three functions of a Python file.  On each hunk's line the user picks the
;; code action "Comment on this change (hunk N of 3)", which asks for the comment (through
;; eglot's `eglot-execute-command' on Emacs 28 and 29, `eglot-execute' on Emacs 30); a line typed
;; above keeps every comment on its hunk's diagnostic; accepting only the third hunk sends the
;; three comments to the model with the decisions, in one tool result; the model's revision
;; answers all three, and *reins* marks them resolved.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-text
  "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")

(defun reins-test-edit (id pairs)
  "A scripted reply: the model's edit ID of calc.py, each of PAIRS (old . new) a replacement."
  `((toolCalls . ,(vector `((id . ,id) (name . "edit")
                            (arguments . ((path . "calc.py")
                                          (edits . ,(vconcat (mapcar (lambda (pair) `((oldText . ,(car pair))
                                                                                      (newText . ,(cdr pair))))
                                                                     pairs))))))))))

(defun reins-test-comments ()
  "The comment lines of reins's diagnostics in the current buffer: (LINE . COMMENT), by line."
  (sort (cl-loop for diag in eglot--diagnostics
                 for lsp = (cdr (assoc 'eglot-lsp-diag (eglot--diag-data diag)))
                 for message = (plist-get lsp :message)
                 when (and (equal (plist-get lsp :source) "reins")
                           (string-match "\nyour comment: \\(.*\\)" message))
                 collect (cons (plist-get (plist-get (plist-get lsp :range) :start) :line)
                               (match-string 1 message)))
        (lambda (a b) (< (car a) (car b)))))

(let* ((dir (reins-test-setup
             (vector
              (reins-test-edit "call_1" '(("def add" . "def plus") ("def sub" . "def minus") ("def mul" . "def times")))
              (reins-test-edit "call_2" '(("def add" . "def total") ("def sub" . "def difference")
                                          ;; Beside the line the third comment is on, not on it: eglot may not
                                          ;; have sent the accepted hunk's didChange yet.
                                          ("    return a * b" . "    \"\"\"a times b\"\"\"\n    return a * b")))
              '((text . "Renamed as you asked.")))
             `(("calc.py" . ,reins-test-text))))
       (file (expand-file-name "calc.py" dir))
       (comments '("call it total" "call it difference" "times is good; add a docstring")))
  (reins-test-load-reins)
  (let ((server (reins-test-connect file)))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command "reins.chat.send" :arguments (vector (list :text "Better names."))))
    (reins-test-wait "the proposal (edit_proposed)" (lambda () (reins-test-event "edit_proposed")))
    (reins-test-wait "its diagnostics"
                     (lambda () (= 3 (cl-count-if (lambda (diag)
                                                    (equal (plist-get (cdr (assoc 'eglot-lsp-diag (eglot--diag-data diag)))
                                                                      :source)
                                                           "reins"))
                                                  eglot--diagnostics))))

    ;; A comment on each hunk, asked for by the code action.
    (cl-loop for line in '(0 4 8)
             for n from 1
             for comment in comments
             do (goto-char (point-min))
             (forward-line line)
             (cl-letf (((symbol-function 'read-string) (lambda (&rest _) comment)))
               (reins-test-pick (format "Comment on this change (hunk %d of 3)" n)))
             (reins-test-wait (format "comment %d on its hunk" n)
                              (lambda () (= n (length (reins-test-comments))))))

    ;; The user types a line at the top: the comments stay on their hunks.
    (goto-char (point-min))
    (insert "# calc\n")
    (eglot--signal-textDocument/didChange)
    (reins-test-wait "the comments to move down a line"
                     (lambda () (equal (reins-test-comments) (cl-mapcar #'cons '(1 5 9) comments))))

    ;; Accept only the third hunk: the decision takes all three comments to the model.
    (goto-char (point-min))
    (forward-line 9)
    (reins-test-pick "Accept only hunk 3 of 3 (reject the others)")
    (reins-test-wait "the revision's proposal"
                     (lambda () (= 2 (cl-count-if (lambda (p) (equal (plist-get (plist-get p :event) :type) "edit_proposed"))
                                                  reins-test-events))))
    (let* ((end (cl-find-if (lambda (p) (and (equal (plist-get (plist-get p :event) :type) "tool_execution_end")
                                             (equal (plist-get (plist-get p :event) :toolCallId) "call_1")))
                            reins-test-events))
           (result (plist-get (plist-get end :event) :result))
           (told (mapconcat (lambda (block) (or (plist-get block :text) "")) (plist-get result :content) "")))
      (dolist (line '("hunk 1 (line 2): rejected — comment: call it total"
                      "hunk 2 (line 6): rejected — comment: call it difference"
                      "hunk 3 (line 10): applied — comment: times is good; add a docstring"))
        (unless (string-match-p (regexp-quote line) told)
          (reins-test-fail "the model was not told %S: %S" line told))))
    (dolist (comment comments)
      (unless (reins-test-shows (regexp-quote (concat ": " comment)))
        (reins-test-fail "*reins* did not mark %S resolved" comment)))
    (unless (= 3 (with-current-buffer "*reins*" (how-many "✓ resolved: your comment on hunk" (point-min) (point-max))))
      (reins-test-fail "*reins* did not mark three comments resolved"))

    ;; Accept the revision; the run ends.
    (goto-char (point-min))
    (forward-line 1)
    (reins-test-pick "Accept agent edit")
    (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
    (unless (string-match-p "def total(a, b):" (buffer-string))
      (reins-test-fail "the revision was not applied: %S" (buffer-string)))
    (eglot-shutdown server))
  (reins-test-pass "three comments reached the model with the decisions, on their hunks, and were resolved"))
