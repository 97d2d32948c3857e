;;; eglot-review.el --- a real client reviews an agent edit: Emacs + eglot against `reins lsp'  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-review.el
;;
;; Starts the scripted model server, whose model edits a Python file; opens the file in a
;; temporary project, connects eglot to `reins lsp', sends a chat message, waits for the proposal
;; (`edit_proposed'), picks "Accept agent edit" from the code actions on the changed line through
;; eglot's own action picker, and checks that the buffer changed through `workspace/applyEdit'
;; and the run finished.  Exits 0 on success, 1 with a FAIL line otherwise.

(require 'cl-lib)
;; -Q skips site-start; Debian's elpa-eglot is a package under /usr/share/emacs/site-lisp/elpa.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'eglot)

(defconst reins-test-timeout 60)
(defconst reins-test-new-line "    return a + b  # the sum")
(defvar reins-test-events nil "Every `reins/event' notification's params, newest first.")

(defun reins-test-fail (format-string &rest args)
  (message "FAIL: %s" (apply #'format format-string args))
  (kill-emacs 1))

(defun reins-test-wait (what predicate)
  "Wait until PREDICATE holds, failing with WHAT after `reins-test-timeout' seconds."
  (let ((deadline (+ (float-time) reins-test-timeout)))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (reins-test-fail "timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(cl-defmethod eglot-handle-notification (_server (_method (eql reins/event)) &rest params)
  (push params reins-test-events))

(defun reins-test-event (type)
  "The newest event of TYPE, or nil."
  (cl-find-if (lambda (params) (equal (plist-get (plist-get params :event) :type) type))
              reins-test-events))

;; The server's edit arrives as a request the user already approved by accepting it.
(setq eglot-confirm-server-initiated-edits nil)

(let* ((reins (expand-file-name (or (getenv "REINS_BIN") (reins-test-fail "set REINS_BIN to the reins binary"))))
       (scripted (expand-file-name
                  (or (getenv "SCRIPTED_LLM_BIN") (reins-test-fail "set SCRIPTED_LLM_BIN to the scripted-llm binary"))))
       (dir (file-name-as-directory (make-temp-file "reins-emacs-" t)))
       (script (expand-file-name "script.json" dir))
       (file (expand-file-name "add.py" dir))
       (process-environment (append (list (concat "REINS_HOME=" dir ".reins-home")
                                          "OPENAI_API_KEY=sk-emacs-test")
                                    process-environment))
       (llm-buffer (generate-new-buffer " *scripted-llm*"))
       base-url)
  ;; The model edits the return line, then answers.
  (with-temp-file script
    (insert (json-encode
             (vector
              `((toolCalls . ,(vector `((id . "call_1") (name . "edit")
                                        (arguments . ((path . "add.py")
                                                      (edits . ,(vector `((oldText . "    return a + b")
                                                                          (newText . ,reins-test-new-line))))))))))
              '((text . "Annotated the sum."))))))
  (with-temp-file file
    (insert "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"))

  ;; The model server prints its base URL on the first line of stdout.
  (let ((llm (make-process :name "scripted-llm" :buffer llm-buffer
                           :command (list scripted "--script" script)
                           :stderr (get-buffer-create " *scripted-llm stderr*"))))
    (reins-test-wait "the scripted model server's URL"
                     (lambda () (with-current-buffer llm-buffer
                                  (string-match "^\\(http://[^\n]+\\)\n" (buffer-string)))))
    (setq base-url (with-current-buffer llm-buffer
                     (string-match "^\\(http://[^\n]+\\)\n" (buffer-string))
                     (match-string 1 (buffer-string))))
    (message "scripted model at %s" base-url)

    ;; A project for eglot without needing git.
    (add-hook 'project-find-functions (lambda (_dir) (cons 'transient dir)))
    (setq eglot-server-programs
          `((python-mode . (,reins "lsp" "--stdio"
                                   :initializationOptions (:baseUrl ,base-url :model "scripted-model")))))
    (find-file file)
    (unless (derived-mode-p 'python-mode) (python-mode))
    (apply #'eglot (eglot--guess-contact))
    (reins-test-wait "eglot to connect" (lambda () (eglot-current-server)))
    (let ((server (eglot-current-server)))
      (jsonrpc-request server :workspace/executeCommand
                       (list :command "reins.chat.send" :arguments (vector (list :text "Annotate the sum."))))
      (reins-test-wait "the proposal (edit_proposed)" (lambda () (reins-test-event "edit_proposed")))
      (let* ((edit (plist-get (plist-get (reins-test-event "edit_proposed") :event) :edit))
             (hunk (aref (plist-get edit :hunks) 0))
             (line (plist-get (plist-get (plist-get hunk :range) :start) :line)))
        (message "proposal %s: %d hunk(s), the first on line %d"
                 (plist-get edit :id) (length (plist-get edit :hunks)) line)
        (when (string-match-p "# the sum" (buffer-string))
          (reins-test-fail "the buffer changed before the edit was accepted"))

        ;; The code actions on the changed line, as a user with the cursor there gets them.
        (goto-char (point-min))
        (forward-line line)
        (let* ((actions (eglot-code-actions (line-beginning-position) (line-end-position) nil nil))
               (titles (mapcar (lambda (action) (plist-get action :title)) actions)))
          (message "code actions: %S" titles)
          (dolist (wanted '("Accept agent edit" "Reject agent edit"))
            (unless (member wanted titles)
              (reins-test-fail "code action %S missing from %S" wanted titles)))
          ;; Pick "Accept agent edit" through eglot's own picker, as a user would.
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (&rest _) "Accept agent edit")))
            (let ((last-nonmenu-event ?\r))
              (eglot--read-execute-code-action actions server nil)))))

      (reins-test-wait "the buffer to change (workspace/applyEdit)"
                       (lambda () (string-match-p (regexp-quote reins-test-new-line) (buffer-string))))
      (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
      (let ((resolved (plist-get (reins-test-event "edit_resolved") :event))
            (end (plist-get (reins-test-event "agent_end") :event)))
        (unless (equal (plist-get resolved :outcome) "applied")
          (reins-test-fail "the edit was resolved as %S" resolved))
        (unless (equal (plist-get end :reason) "final_answer")
          (reins-test-fail "the run ended with %S: %S" (plist-get end :reason) (plist-get end :error))))
      (unless (equal (buffer-string)
                     (concat "def add(a, b):\n" reins-test-new-line "\n\nprint(add(2, 3))\n"))
        (reins-test-fail "the buffer reads %S" (buffer-string)))
      (eglot-shutdown server))
    (delete-process llm))
  (message "PASS: eglot accepted the agent's edit through \"Accept agent edit\" and the buffer changed")
  (kill-emacs 0))
