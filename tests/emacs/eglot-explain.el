;;; eglot-explain.el --- a real client: Emacs + eglot against `reins lsp'  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-explain.el
;;
;; Starts the scripted model server, opens a Python file in a temporary project, connects eglot
;; to `reins lsp', lists the code actions on a region, picks "Agent: explain this" the way a user
;; would (through eglot's own action picker), and waits for the run to finish with the scripted
;; answer.  Exits 0 on success, 1 with a FAIL line otherwise.

(require 'cl-lib)
;; -Q skips site-start; Debian's elpa-eglot is a package under /usr/share/emacs/site-lisp/elpa.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'eglot)

(defconst reins-test-answer "This function adds two numbers and returns the sum.")
(defconst reins-test-timeout 60)
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

(defun reins-test-agent-end ()
  (cl-find-if (lambda (params) (equal (plist-get (plist-get params :event) :type) "agent_end"))
              reins-test-events))

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
  (with-temp-file script
    (insert (json-encode (vector (list (cons 'text reins-test-answer))))))
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
      (message "connected to %s" (plist-get (eglot--server-info server) :name))

      ;; The code actions on the region of the function.
      (goto-char (point-min))
      (let* ((beg (point-min))
             (end (progn (forward-line 2) (point)))
             (actions (eglot-code-actions beg end nil nil))
             (titles (mapcar (lambda (action) (plist-get action :title)) actions)))
        (message "code actions: %S" titles)
        (dolist (wanted '("Ask agent about selection" "Agent: explain this" "Agent: review this"
                          "Agent: write tests for this"))
          (unless (member wanted titles)
            (reins-test-fail "code action %S missing from %S" wanted titles)))

        ;; Pick "Agent: explain this" through eglot's own picker, as a user would.
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (&rest _) "Agent: explain this")))
          ;; A keyboard event (not a mouse list) makes eglot pick with `completing-read'.
          (let ((last-nonmenu-event ?\r))
            (eglot--read-execute-code-action actions server nil))))

      (reins-test-wait "the run to end (agent_end)" #'reins-test-agent-end)
      (let* ((event (plist-get (reins-test-agent-end) :event))
             (reason (plist-get event :reason))
             (messages (append (plist-get event :messages) nil))
             (answer (cl-find-if (lambda (m) (equal (plist-get m :role) "assistant")) messages))
             (text (mapconcat (lambda (c) (or (plist-get c :text) "")) (plist-get answer :content) "")))
        (unless (equal reason "final_answer")
          (reins-test-fail "the run ended with %S: %S" reason (plist-get event :error)))
        (unless (equal text reins-test-answer)
          (reins-test-fail "the answer was %S" text))
        (message "agent_end after %d reins/event notifications: %s" (length reins-test-events) text))
      (eglot-shutdown server))
    (delete-process llm))
  (message "PASS: eglot listed the code actions and ran \"Agent: explain this\" to completion")
  (kill-emacs 0))
