;;; reins-connection.el --- one `reins lsp' per project root, over jsonrpc.el  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  The connection a project's buffers, chat and review share:
;; started (or connected to, as `reins-connect' says) on first use, initialized with what
;; reins.el does besides LSP, and the requests reins sends Emacs handed to their owners.

(require 'cl-lib)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)

(defvar reins-command)
(defvar reins-connect)
(defvar reins-listen-token)
(defvar reins-listen-token-file)
(defvar reins-initialization-options)
(defvar reins-events-buffer-size)
(defvar reins-sync-predicate)
(declare-function reins--open "reins-buffers")
(declare-function reins--detach "reins-buffers")
(declare-function reins--flush-all "reins-buffers")
(declare-function reins--apply-workspace-edit "reins-buffers")
(declare-function reins--path-to-uri "reins-buffers")
(declare-function reins--diagnostics-answer "reins-diagnostics")
(declare-function reins--language-server-answer "reins-language-servers")

;;; The token of a listening reins

(defun reins--listen-token ()
  "The token for a TCP `reins-connect', or a `user-error' saying where to put it."
  (let ((from-file (and reins-listen-token-file
                        (with-temp-buffer
                          (insert-file-contents (expand-file-name reins-listen-token-file))
                          (string-trim (buffer-substring (point-min) (line-end-position))))))
        (from-env (getenv "REINS_LISTEN_TOKEN")))
    (cond (reins-listen-token)
          ((and from-file (not (string-empty-p from-file))) from-file)
          ((and from-env (not (string-empty-p from-env))) from-env)
          (t (user-error "reins: set `reins-listen-token' or `reins-listen-token-file' (or $REINS_LISTEN_TOKEN) to the token of `reins lsp --listen'")))))

;; Every message the server sends, at once (jsonrpc 1.0.14, Emacs 28-29).
;;
;; jsonrpc's process filter reads every message that arrived and hands each on in turn.  When
;; one of them is the answer to a request Emacs is waiting for (`jsonrpc-request'), its
;; continuation `throw's out of the filter: the messages after it in the same read stay in the
;; process buffer until the server writes again.  An instant answer (`reins/event'
;; notifications) or a `workspace/applyEdit' right after that answer then waits for the next
;; thing the server says, which may never come.  Newer jsonrpc (the ELPA package, Emacs 30)
;; queues the messages and dispatches them from timers, and is left alone (the check is on the
;; loaded filter, not a version number).  Here the filter is advised to read the rest the moment
;; Emacs is back in its command loop, and a re-entered filter (a handler's reply let Emacs read
;; more output) only appends, so the running loop reads it in order.

(defvar reins--filtering nil
  "Processes whose jsonrpc filter is running.")

(defun reins--jsonrpc-dispatches-inline-p ()
  "Whether the loaded `jsonrpc--process-filter' dispatches messages as it reads them.
The fixed one queues them (`jsonrpc-mqueue') and needs no help."
  (not (string-match-p "jsonrpc-mqueue"
                       (prin1-to-string (symbol-function 'jsonrpc--process-filter)))))

(defun reins--append-output (proc string)
  "Append STRING at PROC's process mark, for the running filter loop to read."
  (when (buffer-live-p (process-buffer proc))
    (with-current-buffer (process-buffer proc)
      (save-restriction
        (widen)
        (save-excursion
          (goto-char (process-mark proc))
          (let ((inhibit-read-only t)) (insert string))
          (set-marker (process-mark proc) (point)))))))

(defun reins--read-the-rest (proc)
  "Run PROC's filter on what is already in its buffer."
  (when (and (process-live-p proc) (buffer-live-p (process-buffer proc)))
    (jsonrpc--process-filter proc "")))

(defun reins--jsonrpc-filter (filter proc string)
  "Around advice for FILTER (`jsonrpc--process-filter') on PROC's output STRING."
  (if (memq proc reins--filtering)
      (reins--append-output proc string)
    (let ((reins--filtering (cons proc reins--filtering))
          (finished nil))
      (unwind-protect
          (progn (funcall filter proc string)
                 (setq finished t))
        (unless finished
          ;; A continuation threw (or a handler failed) mid-loop: read the rest as soon as
          ;; Emacs is back in its loop, in order, before anything that arrives later.
          (run-at-time 0 nil #'reins--read-the-rest proc))))))

(when (and (reins--jsonrpc-dispatches-inline-p)
           (not (advice-member-p #'reins--jsonrpc-filter 'jsonrpc--process-filter)))
  (advice-add 'jsonrpc--process-filter :around #'reins--jsonrpc-filter))

;;; The connection: one `reins lsp' per project root

(defclass reins-connection (jsonrpc-process-connection)
  ((root :initarg :root :reader reins-connection-root
         :documentation "The project root reins serves, a directory name."))
  :documentation "A `reins lsp' serving one project, beside the buffer's own servers.")

(defvar reins--connections (make-hash-table :test #'equal)
  "Project root -> its live `reins-connection'.")

(defvar reins-event-functions nil
  "Called with (CONNECTION PARAMS) for every `reins/event' notification.")

(defvar-local reins--connection nil
  "The connection this buffer is synced with, or nil.")

(defun reins--root (&optional dir)
  "The project root of DIR (default: `default-directory'): the project's, else DIR."
  (let* ((dir (or dir default-directory))
         (project (project-current nil dir)))
    (file-name-as-directory (expand-file-name (if project (project-root project) dir)))))

(defun reins-sync-default-p ()
  "Whether the current buffer is text a person edits: a file in a text or programming mode."
  (and buffer-file-name
       (not (file-remote-p buffer-file-name))
       (derived-mode-p 'prog-mode 'text-mode 'conf-mode)))

(defun reins--process (name root)
  "A process talking to reins for ROOT, named NAME: started, or connected as `reins-connect' says."
  (let ((default-directory root))
    (pcase reins-connect
      ('nil
       (unless (executable-find (car reins-command))
         (user-error "reins: no `%s' on PATH: build it (cargo install --path server/cli) or set `reins-command'"
                     (car reins-command)))
       (make-process :name name :command reins-command :connection-type 'pipe
                     :coding 'utf-8-emacs-unix :noquery t
                     :stderr (get-buffer-create (format "*%s stderr*" name))))
      ((pred stringp)
       (make-network-process :name name :family 'local :service (expand-file-name reins-connect)
                             :coding 'utf-8-emacs-unix :noquery t))
      (`(,host ,port) (open-network-stream name nil host port :coding 'utf-8-emacs-unix))
      (_ (user-error "reins: `reins-connect' is %S, not nil, (HOST PORT) or a socket's path" reins-connect)))))

(defun reins--make-connection (name root)
  "A `reins-connection' for ROOT named NAME, its events kept as `reins-events-buffer-size' says."
  (let ((process (reins--process name root))
        (args (list :name name :root root :process nil
                    :request-dispatcher #'reins--handle-request
                    :notification-dispatcher #'reins--handle-notification
                    :on-shutdown #'reins--on-shutdown)))
    (setq args (plist-put args :process process))
    ;; jsonrpc 1.0.25 (Emacs 30) sizes the log with :events-buffer-config, older ones with
    ;; :events-buffer-scrollback-size (which 1.0.25 warns about).
    (apply #'make-instance 'reins-connection
           (append args
                   (if (reins--slot-p 'jsonrpc-connection '-events-buffer-config)
                       (list :events-buffer-config (list :size reins-events-buffer-size))
                     (list :events-buffer-scrollback-size reins-events-buffer-size))))))

(defun reins--slot-p (class slot)
  "Whether CLASS has SLOT."
  (memq slot (mapcar #'eieio-slot-descriptor-name (eieio-class-slots class))))

(defun reins--initialization-options ()
  "The initializationOptions: `reins-initialization-options', what reins.el does besides LSP
\(it answers `reins/diagnostics' from Flymake and shows failures in the chat), and the token a
TCP `reins-connect' needs."
  (append (list :capabilities (list :diagnostics t :chat t :languageServers t))
          (when (consp reins-connect) (list :token (reins--listen-token)))
          reins-initialization-options))

(defun reins--start (root)
  "Start (or connect to) reins for ROOT, initialize it, and sync the project's open buffers."
  (let* ((name (format "reins %s" (file-name-nondirectory (directory-file-name root))))
         (connection (reins--make-connection name root))
         (uri (reins--path-to-uri root)))
    (condition-case err
        (jsonrpc-request
         connection :initialize
         (list :processId (emacs-pid)
               :clientInfo (list :name "Emacs" :version emacs-version)
               :rootPath root
               :rootUri uri
               :workspaceFolders (vector (list :uri uri :name (file-name-nondirectory (directory-file-name root))))
               :initializationOptions (reins--initialization-options)
               :capabilities
               (list :workspace (list :applyEdit t
                                      :workspaceEdit (list :documentChanges t)
                                      :workspaceFolders t)
                     :textDocument (list :synchronization (list :didSave t :dynamicRegistration :json-false))
                     :window (list :workDoneProgress :json-false)))
         :timeout 30)
      (error (ignore-errors (jsonrpc-shutdown connection))
             (user-error "reins: it did not start in %s: %s (see *%s stderr*)"
                         root (error-message-string err) name)))
    (jsonrpc-notify connection :initialized (make-hash-table))
    (puthash root connection reins--connections)
    (dolist (buffer (buffer-list))
      (with-current-buffer buffer
        (when (and buffer-file-name (not reins--connection)
                   (string-prefix-p root (expand-file-name buffer-file-name))
                   (funcall reins-sync-predicate))
          (reins--open connection))))
    connection))

(defun reins--any-connection-p ()
  "Whether a reins runs for any project."
  (> (hash-table-count reins--connections) 0))

(defun reins--live-connection (root)
  "The running connection of ROOT, or nil."
  (let ((connection (gethash root reins--connections)))
    (and connection (jsonrpc-running-p connection) connection)))

(defun reins-ensure-connection (&optional root)
  "The connection of ROOT (default: the current buffer's project), started when needed."
  (let ((root (or root (reins--root))))
    (or (and reins--connection (jsonrpc-running-p reins--connection)
             (equal (reins-connection-root reins--connection) root)
             reins--connection)
        (reins--live-connection root)
        (reins--start root))))

(defun reins--on-shutdown (connection)
  "CONNECTION's reins is gone: forget it and its buffers."
  (remhash (reins-connection-root connection) reins--connections)
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (eq reins--connection connection)
        (reins--detach))))
  (let ((process (jsonrpc--process connection)))
    (run-hook-with-args 'reins-event-functions connection
                        (list :event (list :type "connection_closed"
                                           :status (and process (process-exit-status process))
                                           :log (and process (buffer-live-p (process-get process 'jsonrpc-stderr))
                                                     (buffer-name (process-get process 'jsonrpc-stderr))))))))

(defun reins-shutdown ()
  "Stop the reins of the current project."
  (interactive)
  (let ((connection (reins--live-connection (reins--root))))
    (unless connection (user-error "reins: not running in %s" (reins--root)))
    (ignore-errors (jsonrpc-request connection :shutdown nil :timeout 3))
    (ignore-errors (jsonrpc-notify connection :exit nil))
    ;; reins exits by itself on `exit'; it is killed only if it does not within 3 s.
    (let ((process (jsonrpc--process connection))
          (deadline (+ (float-time) 3)))
      (while (and (process-live-p process) (< (float-time) deadline))
        (accept-process-output process 0.05))
      (when (process-live-p process) (jsonrpc-shutdown connection)))))


;;; Talking to reins

(defun reins-request (connection method params &optional timeout)
  "Send the request METHOD with PARAMS to CONNECTION and wait for its result, after the
changes it has not seen yet.  An error answer becomes a `user-error' in one line."
  (reins--flush-all connection)
  (condition-case err
      (jsonrpc-request connection method params :timeout (or timeout 30))
    (jsonrpc-error
     (user-error "reins: %s" (or (alist-get 'jsonrpc-error-message (cdr err)) (error-message-string err))))))

(defun reins-execute (connection command argument &optional timeout)
  "Run reins's COMMAND with ARGUMENT (a plist, nil for {}) on CONNECTION; returns its result."
  (reins-request connection :workspace/executeCommand
                 (list :command command :arguments (vector (or argument (make-hash-table))))
                 timeout))

(defun reins-execute-async (connection command argument on-result &optional on-error)
  "Run COMMAND with ARGUMENT on CONNECTION; ON-RESULT gets its result, ON-ERROR (default: the
echo area) the error's message."
  (reins--flush-all connection)
  (jsonrpc-async-request
   connection :workspace/executeCommand
   (list :command command :arguments (vector (or argument (make-hash-table))))
   :success-fn on-result
   :error-fn (lambda (error)
               (let ((text (or (plist-get error :message) (format "%S" error))))
                 (if on-error (funcall on-error text) (message "reins: %s" text))))))

;;; What reins asks of Emacs

(defun reins--handle-notification (connection method params)
  "Handle a notification from reins; a failure is reported, never raised into jsonrpc."
  (condition-case-unless-debug err
      (pcase method
        ('reins/event (run-hook-with-args 'reins-event-functions connection params))
        ('window/showMessage
         (message "%s" (plist-get params :message))
         (run-hook-with-args 'reins-event-functions connection
                             (list :event (list :type "show_message" :message (plist-get params :message)
                                                :level (plist-get params :type))))))
    (error (message "reins: handling %s: %s" method (error-message-string err)))))

(defun reins--handle-request (_connection method params)
  "Answer a request from reins."
  (pcase method
    ('workspace/applyEdit (reins--apply-workspace-edit params))
    ('reins/diagnostics (reins--diagnostics-answer (plist-get params :uris)))
    ('reins/languageServer (reins--language-server-answer params))
    ('workspace/configuration (make-vector (length (plist-get params :items)) nil))
    ((or 'window/workDoneProgress/create 'client/registerCapability 'client/unregisterCapability) nil)
    ('window/showMessageRequest nil)
    (_ (signal 'jsonrpc-error (list (cons 'jsonrpc-error-code -32601)
                                    (cons 'jsonrpc-error-message (format "%s is not handled by reins.el" method)))))))


(provide 'reins-connection)
;;; reins-connection.el ends here
