;;; reins-test.el --- what the Emacs tests share  -*- lexical-binding: t; -*-

;; Loaded by each test in tests/emacs (see scripts/test), which run in batch:
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-chat.el
;; A test starts the scripted model server with its replies, makes a temporary project, and
;; connects eglot to the real `reins lsp'.  It ends with `reins-test-pass' (exit 0) or a FAIL
;; line (exit 1).

(require 'cl-lib)
(require 'json)
;; -Q skips site-start; on Emacs 28, Debian's elpa-eglot is a package under
;; /usr/share/emacs/site-lisp/elpa.  Emacs 29 and later have eglot built in, newer than that one.
(unless (locate-library "eglot")
  (require 'package)
  (add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
  (package-initialize))
(require 'eglot)

(defconst reins-test-timeout 60)
(defconst reins-test-root
  (file-name-directory (directory-file-name (file-name-directory (or load-file-name buffer-file-name))))
  "The tests/ directory.")

(defvar reins-test-events nil "Every `reins/event' notification's params, newest first.")
(defvar reins-test-llm nil "The scripted model server's process.")

(defun reins-test-fail (format-string &rest args)
  ;; Straight to stderr: a test may be capturing `message'.
  (princ (format "FAIL: %s\n" (apply #'format format-string args)) #'external-debugging-output)
  (dolist (buffer (buffer-list))
    (when (eq (buffer-local-value 'major-mode buffer) 'reins-chat-mode)
      (princ (format "%s:\n%s\n" (buffer-name buffer) (with-current-buffer buffer (buffer-string)))
             #'external-debugging-output)))
  (kill-emacs 1))

(defun reins-test-pass (what)
  (when (process-live-p reins-test-llm) (delete-process reins-test-llm))
  (message "PASS: %s" what)
  (kill-emacs 0))

(defun reins-test-wait (what predicate)
  "Wait until PREDICATE holds, failing with WHAT after `reins-test-timeout' seconds.
Emacs reads process output and runs timers meanwhile, as in its command loop."
  (let ((deadline (+ (float-time) reins-test-timeout)))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (reins-test-fail "timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defun reins-test-event (type)
  "The newest event of TYPE, or nil."
  (cl-find-if (lambda (params) (equal (plist-get (plist-get params :event) :type) type))
              reins-test-events))

(defun reins-test-shows (regexp)
  "Whether the *reins* buffer holds a match for REGEXP (nil while there is no such buffer: it is
made when the first run starts, which may be after the code action's answer)."
  (let ((buffer (get-buffer "*reins*")))
    (and buffer (with-current-buffer buffer (string-match-p regexp (buffer-string))))))

(defun reins-test-bin (variable)
  (expand-file-name (or (getenv variable) (reins-test-fail "set %s" variable))))

(defun reins-test-setup (replies files)
  "Start the scripted model server playing REPLIES (a vector of alists) and make a project
holding FILES ((NAME . TEXT) ...).  The environment then names the server as a user's would
\(OPENAI_BASE_URL, REINS_MODEL), and `reins' is on PATH.  Returns the project directory."
  (let* ((dir (file-name-as-directory (make-temp-file "reins-emacs-" t)))
         (script (expand-file-name "script.json" dir))
         (llm-buffer (generate-new-buffer " *scripted-llm*"))
         (reins (reins-test-bin "REINS_BIN")))
    (with-temp-file script (insert (json-encode replies)))
    (dolist (file files)
      (with-temp-file (expand-file-name (car file) dir) (insert (cdr file))))
    (setq reins-test-llm (make-process :name "scripted-llm" :buffer llm-buffer
                                       :command (list (reins-test-bin "SCRIPTED_LLM_BIN") "--script" script)
                                       :stderr (get-buffer-create " *scripted-llm stderr*")))
    ;; The model server prints its base URL on the first line of stdout.
    (reins-test-wait "the scripted model server's URL"
                     (lambda () (with-current-buffer llm-buffer
                                  (string-match "^\\(http://[^\n]+\\)\n" (buffer-string)))))
    (let ((url (with-current-buffer llm-buffer
                 (string-match "^\\(http://[^\n]+\\)\n" (buffer-string))
                 (match-string 1 (buffer-string))))
          (bin-dir (file-name-directory reins)))
      (message "scripted model at %s" url)
      (setq process-environment
            (append (list (concat "REINS_HOME=" dir ".reins-home")
                          "OPENAI_API_KEY=sk-emacs-test"
                          (concat "OPENAI_BASE_URL=" url)
                          "REINS_MODEL=scripted-model"
                          (concat "PATH=" bin-dir path-separator (getenv "PATH")))
                    process-environment))
      (push bin-dir exec-path))
    ;; A project for eglot without needing git.
    (add-hook 'project-find-functions (lambda (_dir) (cons 'transient dir)))
    dir))

(defun reins-test-load-reins ()
  "Load editors/emacs/reins.el and reins-eglot.el as a user of the eglot set-up does, recording every `reins/event' it handles.
Emacs then reads a megabyte of process output at a time (as many LSP users set it) and is busy
for 0.3 s right after sending each command, as a busy Emacs is: the server's answer and what
follows it (a run's events, a `workspace/applyEdit') wait in the pipe and arrive in one read."
  (load (expand-file-name "../editors/emacs/reins.el" reins-test-root) nil t)
  (load (expand-file-name "../editors/emacs/reins-eglot.el" reins-test-root) nil t)
  (cl-defmethod eglot-handle-notification :before (_server (_method (eql reins/event)) &rest params)
    (push params reins-test-events))
  (setq read-process-output-max (* 1024 1024))
  (advice-add 'jsonrpc-connection-send :after
              (lambda (_connection &rest message)
                (when (equal (plist-get message :method) :workspace/executeCommand)
                  ;; Busy without reading process output (a synchronous process does not).
                  (call-process "sleep" nil nil nil "0.3")))))

(defun reins-test-connect (file)
  "Visit FILE in python-mode and connect eglot as configured; returns the server."
  (find-file file)
  (unless (derived-mode-p 'python-mode) (python-mode))
  (apply #'eglot (eglot--guess-contact))
  (reins-test-wait "eglot to connect" (lambda () (eglot-current-server)))
  (eglot-current-server))

(defun reins-test-pick (title &optional beg end)
  "Pick the code action TITLE on BEG..END (default: the current line) through eglot's own
picker, as a user would; returns the titles that were offered."
  (let* ((beg (or beg (line-beginning-position)))
         (end (or end (line-end-position)))
         (actions (eglot-code-actions beg end nil nil))
         (titles (mapcar (lambda (action) (plist-get action :title)) actions)))
    (unless (member title titles)
      (reins-test-fail "code action %S missing from %S" title titles))
    (cl-letf (((symbol-function 'completing-read) (lambda (&rest _) title)))
      ;; A keyboard event (not a mouse list) makes eglot pick with `completing-read'.
      (let ((last-nonmenu-event ?\r))
        (eglot--read-execute-code-action actions (eglot-current-server) nil)))
    titles))

;;; reins.el: its own connection, beside the buffer's language server

(defun reins-test-load-reins-el ()
  "Load editors/emacs/reins.el as a user does, recording every `reins/event' it hears.
As in `reins-test-load-reins', Emacs reads a megabyte of output at a time and is busy for 0.3 s
after sending each command, so an answer and what follows it arrive in one read."
  (load (expand-file-name "../editors/emacs/reins.el" reins-test-root) nil t)
  (add-hook 'reins-event-functions (lambda (_connection params) (push params reins-test-events)))
  (setq read-process-output-max (* 1024 1024))
  (advice-add 'jsonrpc-connection-send :after
              (lambda (_connection &rest message)
                (when (equal (plist-get message :method) :workspace/executeCommand)
                  (call-process "sleep" nil nil nil "0.3")))))

(defun reins-test-chat-buffer ()
  "The chat buffer, or a failure."
  (or (cl-find-if (lambda (b) (eq (buffer-local-value 'major-mode b) 'reins-chat-mode)) (buffer-list))
      (reins-test-fail "there is no chat buffer")))

(defun reins-test-type-and-send (text)
  "Type TEXT in the chat's prompt and press C-c C-c, as a user does."
  (goto-char (point-max))
  (insert text)
  (call-interactively (key-binding (kbd "C-c C-c"))))

(defun reins-test-chat-shows (regexp)
  "Whether the chat's transcript holds a match for REGEXP."
  (with-current-buffer (reins-test-chat-buffer)
    (string-match-p regexp (buffer-substring-no-properties (point-min) reins-chat--prompt))))

(defun reins-test-tool-results ()
  "The text of each tool result of the last run, in order."
  (let ((end (plist-get (reins-test-event "agent_end") :event)))
    (cl-loop for m across (plist-get end :messages)
             when (equal (plist-get m :role) "toolResult")
             collect (mapconcat (lambda (block) (or (plist-get block :text) ""))
                                (append (plist-get m :content) nil) ""))))

(provide 'reins-test)
;;; reins-test.el ends here
