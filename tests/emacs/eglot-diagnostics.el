;;; eglot-diagnostics.el --- the agent is told what its edit broke, from Flymake  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-diagnostics.el
;;
;; A real Flymake backend stands in for a linter: an error on every `TODO', set up as a major
;; mode sets up its own backend (Eglot replaces those with its own; reins.el keeps them).  It runs
;; again on every change, as a linter would (Flymake's own trigger is an idle timer, which batch
;; Emacs never reaches).  The model's edit adds a TODO; reins asks Emacs for its diagnostics
;; before and after the edit (`reins/diagnostics', answered from Flymake by reins.el), and the tool
;; result the model reads names the new error and not the one that was there before (the same
;; message, a line below).  A buffer nothing checks is left out of the answer.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defun reins-test-lint (report-fn &rest _)
  "A Flymake backend: an error on every `TODO'."
  (let (found)
    (save-excursion
      (goto-char (point-min))
      (while (search-forward "TODO" nil t)
        (push (flymake-make-diagnostic (current-buffer) (match-beginning 0) (match-end 0)
                                       :error "TODO left here")
              found)))
    (funcall report-fn found)))

(defun reins-test-relint (&rest _)
  "Run Flymake again shortly after a change, as a linter does."
  (let ((buffer (current-buffer)))
    (run-at-time 0.05 nil (lambda () (when (buffer-live-p buffer)
                                       (with-current-buffer buffer (flymake-start)))))))

(add-hook 'python-mode-hook
          (lambda ()
            (add-hook 'flymake-diagnostic-functions #'reins-test-lint nil t)
            (add-hook 'after-change-functions #'reins-test-relint nil t)))

(defconst reins-test-text "def add(a, b):\n    return a + b  # TODO check the types\n")

(defconst reins-test-edit
  `((toolCalls . ,(vector `((id . "call_1") (name . "edit")
                            (arguments . ((path . "add.py")
                                          (edits . ,(vector '((oldText . "def add(a, b):")
                                                              (newText . "def add(a, b):  # TODO docstring"))))))))))
  "The model's reply: an edit that adds a TODO.")

(let* ((dir (reins-test-setup (vector reins-test-edit '((text . "Added a note.")))
                              `(("add.py" . ,reins-test-text))))
       (file (expand-file-name "add.py" dir)))
  (reins-test-load-reins)
  (setq reins-initialization-options '(:approval (:edit "auto")))
  (let ((server (reins-test-connect file)))
    (unless (memq #'reins-test-lint flymake-diagnostic-functions)
      (reins-test-fail "the buffer's own Flymake backend was not kept: %S" flymake-diagnostic-functions))
    (flymake-start)
    (reins-test-wait "the linter's first diagnostics" (lambda () (flymake-diagnostics)))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command "reins.chat.send" :arguments (vector (list :text "Note what is missing."))))
    (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
    (unless (string-match-p "# TODO docstring" (buffer-string))
      (reins-test-fail "the edit was not applied: %S" (buffer-string)))
    (let* ((end (plist-get (reins-test-event "agent_end") :event))
           (result (cl-find-if (lambda (m) (equal (plist-get m :role) "toolResult"))
                               (append (plist-get end :messages) nil)))
           (text (mapconcat (lambda (block) (or (plist-get block :text) ""))
                            (append (plist-get result :content) nil) ""))
           (told "The edit resulted in these new problems:\nadd.py:1:19: error: TODO left here (reins-test-lint)"))
      (unless (string-suffix-p told text)
        (reins-test-fail "the model read %S" text)))
    ;; A buffer nothing but reins checks is left out: reins does not wait for it after an edit.
    (flymake-mode -1)
    (let ((answer (eglot-handle-request server 'reins/diagnostics :uris (vector (eglot--path-to-uri file)))))
      (unless (equal (plist-get answer :items) [])
        (reins-test-fail "a buffer nothing checks was answered for: %S" answer)))
    (eglot-shutdown server))
  (reins-test-pass "the model was told the error its edit added, from Flymake"))
