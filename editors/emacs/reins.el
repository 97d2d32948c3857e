;;; reins.el --- the reins agent in Emacs, beside your own language server  -*- lexical-binding: t; -*-

;; For Emacs 28, 29 and 30.  No package besides what Emacs ships (jsonrpc, project, flymake).
;;
;; Load this file from your init, with the `reins' binary on PATH (or `reins-command' set):
;;
;;   (load "/path/to/reins/editors/emacs/reins.el")
;;   (global-set-key (kbd "C-c r") reins-command-map)
;;
;; Why a connection of its own.  reins speaks LSP (`reins lsp'), but eglot runs one server per
;; major mode, so giving reins to eglot takes the buffer's own language server away; lsp-mode
;; runs several, but only for its users.  reins.el therefore talks LSP to `reins lsp' itself,
;; over Emacs's built-in jsonrpc.el: one reins per project root, started on first use, beside
;; whatever else runs in the buffer (eglot, lsp-mode, a Flymake checker, or nothing).  It sends
;; reins the project's open buffers as you type (didOpen/didChange), so the agent reads unsaved
;; text, and answers reins's `reins/diagnostics' from Flymake, whichever backend filled it
;; (eglot's, lsp-mode's, a checker) and from Flycheck, so the agent hears what your real
;; language server says;
;; its `lsp' tool (definitions, references, symbols…) asks eglot's server of the file
;; (`reins/languageServer') rather than start a second one.
;; (The older set-up, reins as eglot's server of some modes, is `reins-eglot.el'.)
;;
;; What you get (tested: tests/emacs/):
;; - `M-x reins-chat' (C-c r c): a chat buffer.  Type below the line, C-c C-c sends, answers
;;   stream in (text, tool calls, the todo list, failures in a line saying what to do), the next
;;   message continues the same session, C-c C-k cancels the running turn;
;; - `M-x reins-ask' (C-c r a) on a region: a question about it, as a follow-up in the chat's
;;   session; `M-x reins-code-actions' (C-c r .) offers reins's code actions there;
;; - `M-x reins-sessions' (C-c r s): pick a session of the project and continue it;
;;   `M-x reins-tree' (C-c r t): the session's entries as a tree, to continue or fork from one;
;; - review: a proposed edit opens `*reins review*', each hunk with its diff; SPC toggles a hunk
;;   between accept and reject, C-c C-c applies the chosen ones (through the buffer, so undo
;;   works), C-c C-k rejects the edit.
;;
;; The model, endpoint and keys come from your reins configuration (config.toml, REINS_MODEL,
;; OPENAI_BASE_URL, OPENAI_API_KEY, …); `reins-initialization-options' can add editor settings.

(require 'cl-lib)
(require 'jsonrpc)
(require 'project)
(require 'flymake)
(require 'subr-x)
(require 'url-util)

(defgroup reins nil
  "The reins coding agent."
  :group 'tools)

(defcustom reins-command '("reins" "lsp")
  "How to start the reins language server."
  :type '(repeat string))

(defcustom reins-connect nil
  "Connect to a running `reins lsp --listen' instead of starting `reins-command'.
Nil: start it.  (HOST PORT): its TCP port, e.g. (\"127.0.0.1\" 9257) at the near end of an
SSH tunnel; the server's token is then sent, from `reins-listen-token', else the first line of
`reins-listen-token-file', else $REINS_LISTEN_TOKEN.  A string: the path of its Unix socket
\(`reins lsp --listen unix:PATH'), which needs no token."
  :type '(choice (const :tag "Start reins-command" nil)
                 (list :tag "TCP" string integer)
                 (string :tag "Unix socket")))

(defcustom reins-listen-token nil
  "The token of the `reins lsp --listen' that `reins-connect' names (TCP only)."
  :type '(choice (const nil) string))

(defcustom reins-listen-token-file nil
  "A file whose first line is that token: the one `reins lsp --listen' printed, or a copy."
  :type '(choice (const nil) file))

(defcustom reins-initialization-options nil
  "Editor settings sent as initializationOptions, a plist such as
\(:approval (:edit \"ask\" :bash \"ask\")).  Nil: only your reins configuration applies."
  :type 'sexp)

(defcustom reins-events-buffer-size 0
  "How many characters of the JSON-RPC traffic `*reins events*' keeps (0: none, nil: all)."
  :type '(choice (const :tag "All" nil) integer))

(defcustom reins-sync-predicate #'reins-sync-default-p
  "Whether a file buffer of a project is sent to reins (a function of no arguments, called
in the buffer)."
  :type 'function)

;;; Shared: the token, the jsonrpc fix, positions, Flymake as LSP

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

(defun reins--utf16-length (string)
  "How many UTF-16 code units STRING has: LSP's default column unit."
  (+ (length string) (cl-loop for c across string count (> c #xffff))))

(defun reins--position (pos)
  "POS as an LSP Position (UTF-16 columns)."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char pos)
      (list :line (1- (line-number-at-pos pos t))
            :character (reins--utf16-length (buffer-substring-no-properties (line-beginning-position) pos))))))

(defun reins--point (position)
  "The buffer position of the LSP POSITION, kept within its line and the buffer."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (max 0 (or (plist-get position :line) 0)))
      (let ((units (or (plist-get position :character) 0))
            (eol (line-end-position)))
        (while (and (> units 0) (< (point) eol))
          (setq units (- units (if (> (char-after) #xffff) 2 1)))
          (forward-char 1))
        (point)))))

(defun reins--path-to-uri (path)
  "The file: URI of PATH."
  (concat "file://" (url-hexify-string (encode-coding-string (expand-file-name path) 'utf-8)
                                       url-path-allowed-chars)))

(defun reins--uri-to-path (uri)
  "The path of a file: URI, or nil for any other."
  (when (and (stringp uri) (string-prefix-p "file://" uri))
    (decode-coding-string (url-unhex-string (substring uri (length "file://"))) 'utf-8)))

(defun reins--own-diagnostic-p (diag)
  "Whether the Flymake DIAG is reins's own (a pending edit's, through eglot): not wanted back."
  (let ((data (flymake-diagnostic-data diag)))
    (equal (plist-get (cdr (and (listp data) (assoc 'eglot-lsp-diag data))) :source) "reins")))

(defun reins--lsp-diagnostic (diag)
  "The Flymake DIAG as an LSP Diagnostic."
  (let* ((data (flymake-diagnostic-data diag))
         (lsp (cdr (and (listp data) (assoc 'eglot-lsp-diag data))))
         (severity (flymake--severity (flymake-diagnostic-type diag)))
         (backend (flymake-diagnostic-backend diag))
         (source (or (plist-get lsp :source) (and backend (symbolp backend) (symbol-name backend))))
         (code (plist-get lsp :code)))
    (append (list :range (list :start (reins--position (flymake-diagnostic-beg diag))
                               :end (reins--position (flymake-diagnostic-end diag)))
                  :severity (cond ((>= severity (warning-numeric-level :error)) 1)
                                  ((>= severity (warning-numeric-level :warning)) 2)
                                  (t 3))
                  :message (flymake-diagnostic-text diag))
            (when source (list :source source))
            (when code (list :code code)))))

(declare-function flycheck-get-checker-for-buffer "flycheck")
(declare-function flycheck-error-line "flycheck")
(declare-function flycheck-error-column "flycheck")
(declare-function flycheck-error-end-line "flycheck")
(declare-function flycheck-error-end-column "flycheck")
(declare-function flycheck-error-level "flycheck")
(declare-function flycheck-error-message "flycheck")
(declare-function flycheck-error-checker "flycheck")
(declare-function flycheck-error-id "flycheck")
(defvar flycheck-current-errors)

(defun reins--flycheck-point (line column)
  "The position of Flycheck's 1-based LINE and COLUMN (nil: the line's start)."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (1- (max 1 line)))
      (min (line-end-position) (+ (point) (max 0 (1- (or column 1))))))))

(defun reins--flycheck-diagnostic (err)
  "The Flycheck error ERR as an LSP Diagnostic."
  (let* ((start (reins--flycheck-point (flycheck-error-line err) (flycheck-error-column err)))
         (end-line (and (fboundp 'flycheck-error-end-line) (flycheck-error-end-line err)))
         (end (if end-line
                  (reins--flycheck-point end-line (flycheck-error-end-column err))
                (save-excursion (goto-char start) (line-end-position))))
         (id (flycheck-error-id err)))
    (append (list :range (list :start (reins--position start) :end (reins--position (max start end)))
                  :severity (pcase (flycheck-error-level err) ('error 1) ('warning 2) (_ 3))
                  :message (or (flycheck-error-message err) "")
                  :source (symbol-name (flycheck-error-checker err)))
            (when id (list :code (format "%s" id))))))

(defun reins--flycheck-checked-p ()
  "Whether Flycheck checks the current buffer."
  (and (bound-and-true-p flycheck-mode)
       (fboundp 'flycheck-get-checker-for-buffer)
       (flycheck-get-checker-for-buffer)))

(defun reins--flymake-diagnostics (&optional beg end)
  "The current buffer's diagnostics (between BEG and END) as LSP Diagnostics: Flymake's,
whichever backend filled it (eglot's, lsp-mode's, a checker), reins's own left out, and
Flycheck's (lsp-mode's default when Flycheck is installed)."
  (append
   (when (bound-and-true-p flymake-mode)
     (mapcar #'reins--lsp-diagnostic
             (cl-remove-if #'reins--own-diagnostic-p (flymake-diagnostics beg end))))
   (when (reins--flycheck-checked-p)
     (cl-loop for err in flycheck-current-errors
              for diagnostic = (reins--flycheck-diagnostic err)
              for start = (reins--point (plist-get (plist-get diagnostic :range) :start))
              when (or (not beg) (and (>= start (save-excursion (goto-char beg) (line-beginning-position)))
                                      (<= start end)))
              collect diagnostic))))

(defun reins--hunks-text (hunks count)
  "\"hunk 1\" or \"hunks 1, 3\" for the 0-based HUNKS, of COUNT."
  (let ((shown (mapconcat (lambda (i) (number-to-string (1+ i))) hunks ", ")))
    (format "%s %s of %d" (if (cdr hunks) "hunks" "hunk") shown count)))

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

;;; Buffers: what reins sees of them

(defvar-local reins--version 0 "The version of this buffer reins last heard of.")
(defvar-local reins--changes nil
  "Changes not yet sent, newest first; `full' when the whole text goes instead.")
(defvar-local reins--before nil "(BEG END START-POSITION END-POSITION) of the change under way.")
(defvar reins--flush-timer nil "The timer that sends pending changes.")

(defun reins--language-id ()
  "The LSP language id of the current buffer, from its major mode."
  (let ((mode (symbol-name major-mode)))
    (replace-regexp-in-string "\\(-ts\\)?-mode$" "" mode)))

(defun reins--buffer-uri ()
  (reins--path-to-uri buffer-file-name))

(defun reins--open (connection)
  "Send the current buffer to CONNECTION (didOpen) and follow its changes from now on."
  (setq reins--connection connection
        reins--version 0
        reins--changes nil)
  (jsonrpc-notify connection :textDocument/didOpen
                  (list :textDocument (list :uri (reins--buffer-uri)
                                            :languageId (reins--language-id)
                                            :version reins--version
                                            :text (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))))
  (add-hook 'before-change-functions #'reins--before-change nil t)
  (add-hook 'after-change-functions #'reins--after-change nil t)
  (add-hook 'after-save-hook #'reins--did-save nil t)
  (add-hook 'kill-buffer-hook #'reins--close nil t)
  (add-hook 'change-major-mode-hook #'reins--close nil t))

(defun reins--detach ()
  "Stop following the current buffer."
  (remove-hook 'before-change-functions #'reins--before-change t)
  (remove-hook 'after-change-functions #'reins--after-change t)
  (remove-hook 'after-save-hook #'reins--did-save t)
  (remove-hook 'kill-buffer-hook #'reins--close t)
  (remove-hook 'change-major-mode-hook #'reins--close t)
  (setq reins--connection nil reins--changes nil))

(defun reins--close ()
  "Tell reins the current buffer is closed."
  (let ((connection reins--connection))
    (when (and connection buffer-file-name (jsonrpc-running-p connection))
      (reins--flush)
      (jsonrpc-notify connection :textDocument/didClose
                      (list :textDocument (list :uri (reins--buffer-uri)))))
    (reins--detach)))

(defun reins--did-save ()
  (when (and reins--connection (jsonrpc-running-p reins--connection))
    (reins--flush)
    (jsonrpc-notify reins--connection :textDocument/didSave
                    (list :textDocument (list :uri (reins--buffer-uri))
                          :text (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max)))))))

(defun reins--before-change (beg end)
  (setq reins--before (list beg end (reins--position beg) (reins--position end))))

(defun reins--after-change (beg end pre-change-length)
  "Record the change of BEG..END (PRE-CHANGE-LENGTH long before) to send it soon.
A change whose region differs from the one announced before it (some commands announce
more) is sent as the whole text, which cannot go wrong."
  (let ((before reins--before))
    (setq reins--before nil)
    (cond ((eq reins--changes 'full))
          ((or (not before) (/= (nth 0 before) beg) (/= (nth 1 before) (+ beg pre-change-length))
               (> (length reins--changes) 100))
           (setq reins--changes 'full))
          (t (push (list :range (list :start (nth 2 before) :end (nth 3 before))
                         :text (buffer-substring-no-properties beg end))
                   reins--changes))))
  (unless reins--flush-timer
    (setq reins--flush-timer (run-at-time 0 nil #'reins--flush-all))))

(defun reins--flush ()
  "Send the current buffer's pending changes, as one didChange."
  (when (and reins--changes reins--connection (jsonrpc-running-p reins--connection))
    (let ((changes (if (eq reins--changes 'full)
                       (vector (list :text (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max)))))
                     (vconcat (reverse reins--changes)))))
      (setq reins--changes nil)
      (cl-incf reins--version)
      (jsonrpc-notify reins--connection :textDocument/didChange
                      (list :textDocument (list :uri (reins--buffer-uri) :version reins--version)
                            :contentChanges changes)))))

(defun reins--flush-all (&optional connection)
  "Send every buffer's pending changes (of CONNECTION only, when given)."
  (setq reins--flush-timer nil)
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and reins--changes (or (not connection) (eq reins--connection connection)))
        (reins--flush)))))

(defun reins--attach-buffer ()
  "Sync the current buffer with its project's reins, if that runs."
  (when (and buffer-file-name (not reins--connection) (funcall reins-sync-predicate))
    (let ((connection (reins--live-connection (reins--root))))
      (when connection (reins--open connection)))))

(add-hook 'find-file-hook #'reins--attach-buffer)
(add-hook 'after-change-major-mode-hook #'reins--attach-buffer)

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

(defun reins--diagnostics-answer (uris)
  "The `reins/diagnostics' answer for URIS (all synced buffers when nil): the Flymake
diagnostics of each buffer something checks; a buffer nothing checks is left out, its problems
unknown rather than absent."
  (let ((buffers (if uris
                     (cl-loop for uri across uris
                              for path = (reins--uri-to-path uri)
                              for buffer = (and path (find-buffer-visiting path))
                              when buffer collect (cons buffer uri))
                   (cl-loop for buffer in (buffer-list)
                            when (buffer-local-value 'reins--connection buffer)
                            collect (cons buffer (with-current-buffer buffer (reins--buffer-uri)))))))
    (list :items
          (vconcat
           (cl-loop for (buffer . uri) in buffers
                    when (with-current-buffer buffer
                           (or (and (bound-and-true-p flymake-mode) (flymake-running-backends))
                               (reins--flycheck-checked-p)))
                    collect (with-current-buffer buffer
                              (list :uri uri :diagnostics (vconcat (reins--flymake-diagnostics)))))))))

(defun reins--document-buffer (uri)
  "The buffer of URI's file, visited when no buffer has it; nil for what is not a file."
  (let ((path (reins--uri-to-path uri)))
    (and path (or (find-buffer-visiting path) (find-file-noselect path)))))

(defun reins--apply-text-edits (edits)
  "Apply the LSP TextEdits EDITS (of the current buffer's text before any of them)."
  (let ((marked (mapcar (lambda (edit)
                          (let ((range (plist-get edit :range)))
                            (list (copy-marker (reins--point (plist-get range :start)))
                                  (copy-marker (reins--point (plist-get range :end)) t)
                                  (plist-get edit :newText))))
                        edits)))
    (save-excursion
      (save-restriction
        (widen)
        (undo-boundary)
        (dolist (edit marked)
          (goto-char (nth 0 edit))
          (delete-region (nth 0 edit) (nth 1 edit))
          (insert (nth 2 edit))
          (set-marker (nth 0 edit) nil)
          (set-marker (nth 1 edit) nil))
        (undo-boundary)))))

(defun reins--stale-reason (document-changes)
  "Why DOCUMENT-CHANGES cannot apply as they are, or nil: a buffer is at another version than
the first change of it names (the others follow from it)."
  (let (seen)
    (cl-loop for change across document-changes
             for document = (plist-get change :textDocument)
             for uri = (plist-get document :uri)
             for version = (plist-get document :version)
             for path = (reins--uri-to-path uri)
             for buffer = (and path (find-buffer-visiting path))
             when (and document version (not (member uri seen)) buffer
                       (buffer-local-value 'reins--connection buffer))
             do (push uri seen)
             and when (/= version (buffer-local-value 'reins--version buffer))
             return (format "%s is at version %d, the edit was made for version %d"
                            (file-name-nondirectory path) (buffer-local-value 'reins--version buffer) version))))

(defun reins--apply-workspace-edit (params)
  "Apply reins's `workspace/applyEdit': it sends one only after you accepted the edit.  Typing
not yet sent goes first, so an edit made for older text is refused and re-based by reins."
  (reins--flush-all)
  (let* ((edit (plist-get params :edit))
         (document-changes (or (plist-get edit :documentChanges) []))
         (stale (reins--stale-reason document-changes)))
    (if stale
        (list :applied :json-false :failureReason stale)
      (condition-case err
          (let (touched)
            (cl-loop for change across document-changes
                     for document = (plist-get change :textDocument)
                     when document
                     do (let ((buffer (reins--document-buffer (plist-get document :uri))))
                          (unless buffer (error "%s is not a file" (plist-get document :uri)))
                          (with-current-buffer buffer
                            (reins--apply-text-edits (append (plist-get change :edits) nil)))
                          (push buffer touched)))
            (cl-loop for (uri edits) on (plist-get edit :changes) by #'cddr
                     do (let ((buffer (reins--document-buffer (substring (symbol-name uri) 1))))
                          (when buffer
                            (with-current-buffer buffer (reins--apply-text-edits (append edits nil)))
                            (push buffer touched))))
            ;; reins counts an edit as landed once a didChange shows it: send it now.
            (dolist (buffer touched)
              (with-current-buffer buffer (reins--flush)))
            (list :applied t))
        (error (list :applied :json-false :failureReason (error-message-string err)))))))

;;; The buffer's own language server, for the agent (`reins/languageServer')

(declare-function eglot-current-server "eglot")
(declare-function eglot--signal-textDocument/didChange "eglot")
(declare-function eglot--capabilities "eglot")
(declare-function eglot--server-info "eglot")

(defconst reins--language-methods
  '(("textDocument/definition" . :definitionProvider)
    ("textDocument/typeDefinition" . :typeDefinitionProvider)
    ("textDocument/implementation" . :implementationProvider)
    ("textDocument/references" . :referencesProvider)
    ("textDocument/hover" . :hoverProvider)
    ("textDocument/documentSymbol" . :documentSymbolProvider)
    ("textDocument/prepareCallHierarchy" . :callHierarchyProvider)
    ("callHierarchy/incomingCalls" . :callHierarchyProvider)
    ("callHierarchy/outgoingCalls" . :callHierarchyProvider)
    ("textDocument/prepareRename" . :renameProvider)
    ("textDocument/rename" . :renameProvider)
    ("workspace/symbol" . :workspaceSymbolProvider))
  "The methods reins passes to the editor's servers, and the capability that offers each.")

(defun reins--eglot-server (capability)
  "The eglot server of the current buffer, when it offers CAPABILITY."
  (when (and (fboundp 'eglot-current-server) (fboundp 'eglot--capabilities))
    (let ((server (eglot-current-server)))
      (and server (jsonrpc-running-p server)
           (let ((offered (plist-get (eglot--capabilities server) capability)))
             (and offered (not (eq offered :json-false))))
           server))))

(defun reins--encoded-column (position encoding)
  "The column of the UTF-16 POSITION counted in ENCODING (\"utf-8\", \"utf-32\")."
  (let* ((point (reins--point position))
         (text (buffer-substring-no-properties (save-excursion (goto-char point) (line-beginning-position)) point)))
    (pcase encoding
      ("utf-8" (length (encode-coding-string text 'utf-8)))
      ("utf-32" (length text))
      (_ (reins--utf16-length text)))))

(defun reins--language-server-answer (params)
  "Answer `reins/languageServer' PARAMS from the buffer's own server (eglot's): nil when it
has none that offers the method; its error in place of a result when it fails."
  (let* ((method (plist-get params :method))
         (capability (cdr (assoc method reins--language-methods)))
         (uri (plist-get params :uri))
         (buffers (if uri
                      (let ((buffer (reins--document-buffer uri))) (and buffer (list buffer)))
                    (cl-remove-if-not (lambda (b) (buffer-local-value 'reins--connection b)) (buffer-list)))))
    (when capability
      (cl-loop
       for buffer in buffers
       for server = (with-current-buffer buffer (reins--eglot-server capability))
       when server
       return
       (with-current-buffer buffer
         (eglot--signal-textDocument/didChange)
         (let* ((encoding (or (plist-get (eglot--capabilities server) :positionEncoding) "utf-16"))
                (lsp-params (copy-sequence (plist-get params :params)))
                (position (plist-get lsp-params :position))
                (name (or (plist-get (eglot--server-info server) :name) (jsonrpc-name server))))
           (when (and position (not (equal encoding "utf-16")))
             (setq lsp-params (plist-put lsp-params :position
                                         (list :line (plist-get position :line)
                                               :character (reins--encoded-column position encoding)))))
           (condition-case err
               (list :server name :positionEncoding encoding
                     :result (jsonrpc-request server (intern (concat ":" method)) lsp-params :timeout 25))
             (jsonrpc-error
              (list :server name :positionEncoding encoding
                    :error (list :code (or (alist-get 'jsonrpc-error-code (cdr err)) -32603)
                                 :message (or (alist-get 'jsonrpc-error-message (cdr err)) "failed")))))))))))

;;; Asking about code

(defvar reins-ask-functions nil
  "Called with (CONNECTION ROOT) before an ask is sent; returns the session id to continue, or
nil.  The chat puts its session here, so asks are follow-ups in it.")

(defun reins--session-for (connection root)
  "The session an ask about code in ROOT continues, if the chat has one."
  (run-hook-with-args-until-success 'reins-ask-functions connection root))

(defun reins--ask-argument (beg end question)
  "The `reins.ask' argument for BEG..END of the current buffer with QUESTION."
  (list :uri (reins--buffer-uri)
        :range (list :start (reins--position beg) :end (reins--position end))
        :question question
        :diagnostics (vconcat (reins--flymake-diagnostics beg end))))

(defun reins--ensure-synced (connection)
  "Make sure CONNECTION knows the current buffer."
  (unless buffer-file-name (user-error "reins: this buffer visits no file"))
  (unless (eq reins--connection connection)
    (when reins--connection (reins--close))
    (reins--open connection)))

(defun reins-ask (beg end question)
  "Ask reins QUESTION about the region BEG..END, in the chat's session."
  (interactive
   (if (use-region-p)
       (list (region-beginning) (region-end)
             (let ((q (read-string "Ask reins about the selection: ")))
               (when (string-empty-p (string-trim q)) (user-error "No question; nothing was asked"))
               q))
     (user-error "reins: select the code to ask about first")))
  (let* ((root (reins--root))
         (connection (reins-ensure-connection root)))
    (reins--ensure-synced connection)
    (let ((argument (reins--ask-argument beg end question))
          (session (reins--session-for connection root)))
      (when session (setq argument (plist-put argument :sessionId session)))
      (reins-execute-async connection "reins.ask" argument #'ignore))))

(defun reins-code-actions (beg end)
  "Pick one of reins's code actions for BEG..END (the region, else the line)."
  (interactive (if (use-region-p) (list (region-beginning) (region-end))
                 (list (line-beginning-position) (line-end-position))))
  (let* ((root (reins--root))
         (connection (reins-ensure-connection root)))
    (reins--ensure-synced connection)
    (let* ((actions (append (reins-request connection :textDocument/codeAction
                                           (list :textDocument (list :uri (reins--buffer-uri))
                                                 :range (list :start (reins--position beg) :end (reins--position end))
                                                 :context (list :diagnostics (vconcat (reins--flymake-diagnostics beg end)))))
                            nil))
           (titles (mapcar (lambda (a) (plist-get a :title)) actions)))
      (unless actions (user-error "reins: no code actions here (select some code)"))
      (let* ((title (completing-read "reins: " titles nil t))
             (command (plist-get (cl-find title actions :key (lambda (a) (plist-get a :title)) :test #'equal) :command))
             (argument (copy-sequence (aref (plist-get command :arguments) 0))))
        (when (equal (plist-get command :command) "reins.ask")
          (unless (plist-get argument :question)
            (let ((q (read-string "Ask reins about the selection: ")))
              (when (string-empty-p (string-trim q)) (user-error "No question; nothing was asked"))
              (setq argument (plist-put argument :question q))))
          (let ((session (reins--session-for connection root)))
            (when session (setq argument (plist-put argument :sessionId session)))))
        (reins-execute-async connection (plist-get command :command) argument #'ignore)))))

;;; The rest, and the keys

(let ((dir (file-name-directory (or load-file-name buffer-file-name))))
  (add-to-list 'load-path dir))
(require 'reins-chat)
(require 'reins-review)
(require 'reins-sessions)

(defvar reins-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "c" #'reins-chat)
    (define-key map "a" #'reins-ask)
    (define-key map "." #'reins-code-actions)
    (define-key map "r" #'reins-review)
    (define-key map "s" #'reins-sessions)
    (define-key map "t" #'reins-tree)
    (define-key map "q" #'reins-shutdown)
    map)
  "reins's commands, for a prefix key of your choice: (global-set-key (kbd \"C-c r\") reins-command-map).")
(fset 'reins-command-map reins-command-map)

(provide 'reins)
;;; reins.el ends here
