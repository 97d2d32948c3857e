;;; reins.el --- the reins agent in Emacs, through eglot  -*- lexical-binding: t; -*-

;; For Emacs 28 (with eglot from ELPA or Debian's elpa-eglot), 29 and 30.
;;
;; Load this file from your init (`(load "/path/to/reins/editors/emacs/reins.el")'), with the
;; `reins' binary on PATH (or `reins-command' set).  Eglot runs one server per major mode, so
;; reins becomes the server of the modes in `reins-modes'; for a language whose own server you
;; also need, use reins in a second Emacs or switch with `M-x eglot' per project.
;;
;; To use a reins that runs elsewhere (`reins lsp --listen', through an SSH tunnel), set
;; `reins-connect' to its host and port and `reins-listen-token-file' (or `reins-listen-token')
;; to its token; for its Unix socket, set `reins-connect' to the socket's path.
;;
;; The model, endpoint and keys come from your reins configuration (config.toml, REINS_MODEL,
;; OPENAI_BASE_URL, OPENAI_API_KEY, …); `reins-initialization-options' can add editor settings.
;;
;; What you get (tested in CI: tests/emacs/):
;; - `M-x eglot-code-actions' on a region: "Ask agent about selection" (asks for your question),
;;   "Agent: explain this", "Agent: review this", "Agent: fix the diagnostics here",
;;   "Agent: write tests for this";
;; - the `*reins*' buffer, shown when a run starts: the answer as it streams, tool calls,
;;   retries, proposals waiting for review, how each was decided, and failures with what to do;
;; - proposed edits as diagnostics (Flymake) on the changed lines, with the code actions "Accept
;;   agent edit", "Accept only hunk N of M (reject the others)", "Reject agent edit" and
;;   "Comment on this change" (asks for your comment, which the agent reads with your decision);
;;   accepting applies them through workspace/applyEdit, so undo works;
;; - the agent told what its edits broke, and a `diagnostics' tool: reins asks Emacs for the
;;   buffer's Flymake diagnostics (`reins/diagnostics').  Eglot replaces a buffer's own Flymake
;;   backends (`python-flymake'…) with its own; reins.el keeps them running beside it
;;   (`reins-keep-flymake-backends'), so there is something to tell.

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)

(defgroup reins nil
  "The reins coding agent, through eglot."
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

(defcustom reins-modes '(python-mode python-ts-mode js-mode typescript-ts-mode)
  "Major modes whose buffers eglot connects to reins."
  :type '(repeat symbol))

(defcustom reins-initialization-options nil
  "Editor settings sent as initializationOptions, a plist such as
\(:approval (:edit \"ask\" :bash \"ask\")).  Nil: only your reins configuration applies."
  :type 'sexp)

(defvar reins-answer-buffer "*reins*"
  "Where the runs of reins are shown.")

(defcustom reins-keep-flymake-backends t
  "Keep a buffer's own Flymake backends running when reins manages it.
Eglot replaces them with its own, which shows only reins's proposals; kept, they still mark
problems, and reins can tell the agent what its edits broke."
  :type 'boolean)

(defun reins--initialization-options ()
  "The initializationOptions: `reins-initialization-options', and what reins.el does besides
LSP: it answers `reins/diagnostics' from Flymake."
  (append '(:capabilities (:diagnostics t)) reins-initialization-options))

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

(defun reins--contact ()
  "How eglot reaches reins: it starts `reins-command', or connects as `reins-connect' says.
A connection is eglot's (CLASS :process FUNCTION …): its (HOST PORT) form takes no
initializationOptions, which carry the token."
  (pcase reins-connect
    ('nil (append reins-command (list :initializationOptions (reins--initialization-options))))
    ((pred stringp)
     (let ((path (expand-file-name reins-connect)))
       `(eglot-lsp-server
         :process ,(lambda () (make-network-process :name "reins" :family 'local :service path
                                                    :coding 'utf-8-emacs-unix :noquery t))
         :initializationOptions ,(reins--initialization-options))))
    (`(,host ,port)
     `(eglot-lsp-server
       :process ,(lambda () (open-network-stream "reins" nil host port :coding 'utf-8-emacs-unix))
       :initializationOptions ,(append (list :token (reins--listen-token)) (reins--initialization-options))))
    (_ (user-error "reins: `reins-connect' is %S, not nil, (HOST PORT) or a socket's path" reins-connect))))

(add-to-list 'eglot-server-programs
             `(,reins-modes . ,(lambda (&optional _interactive) (reins--contact))))

;;; Every message the server sends, at once (jsonrpc 1.0.14, Emacs 28-29)

;; jsonrpc's process filter reads every message that arrived and hands each to eglot in turn.
;; When one of them is the answer to a request eglot is waiting for (`jsonrpc-request', which
;; every code action goes through), its continuation `throw's out of the filter: the messages
;; after it in the same read stay in the process buffer until the server writes again.  An
;; instant answer (`reins/event' notifications), a `workspace/applyEdit' request or the
;; diagnostics sent right after that answer then wait for the next thing the server says, which
;; may never come.  Newer jsonrpc (the ELPA package, Emacs 30) queues the messages and dispatches
;; them from timers, and is left alone (the check is on the loaded filter, not a version number).
;; Here the filter is advised to read the rest the moment Emacs is back in its command loop, and
;; a re-entered filter (a handler's reply let Emacs read more output) only appends, so the
;; running loop reads it in order.

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

(when (reins--jsonrpc-dispatches-inline-p)
  (advice-add 'jsonrpc--process-filter :around #'reins--jsonrpc-filter))

;;; The *reins* buffer

(define-derived-mode reins-output-mode special-mode "reins"
  "The runs of reins: answers, tool calls, proposals, failures."
  (setq-local truncate-lines nil)
  (visual-line-mode 1))

(defun reins--output ()
  "The `*reins*' buffer, created when needed."
  (or (get-buffer reins-answer-buffer)
      (with-current-buffer (get-buffer-create reins-answer-buffer)
        (reins-output-mode)
        (current-buffer))))

(defun reins--insert (&rest strings)
  "Append STRINGS to `*reins*', keeping windows that showed its end at the end."
  (with-current-buffer (reins--output)
    (let* ((inhibit-read-only t)
           (following (cl-remove-if-not (lambda (w) (>= (window-point w) (point-max)))
                                        (get-buffer-window-list (current-buffer) nil t))))
      (save-excursion
        (goto-char (point-max))
        (apply #'insert strings))
      (dolist (w following)
        (set-window-point w (point-max))))))

(defun reins--show ()
  "Show `*reins*' without selecting it."
  (display-buffer (reins--output) '(nil (inhibit-same-window . t))))

(defun reins--hunks-text (hunks count)
  "\"hunk 1\" or \"hunks 1, 3\" for the 0-based HUNKS, of COUNT."
  (let ((shown (mapconcat (lambda (i) (number-to-string (1+ i))) hunks ", ")))
    (format "%s %s of %d" (if (cdr hunks) "hunks" "hunk") shown count)))

(defvar reins--proposals (make-hash-table :test #'equal)
  "Pending edit id -> what it is: (\"edit\" . HUNKS) or (\"command\" . COMMAND).")

(defun reins--resolved-text (event)
  "One line saying how the pending edit of the edit_resolved EVENT ended."
  (let* ((id (plist-get event :id))
         (outcome (plist-get event :outcome))
         (hunks (append (plist-get event :hunks) nil))
         (proposal (gethash id reins--proposals))
         (count (and (equal (car proposal) "edit") (cdr proposal)))
         (reason (plist-get event :reason)))
    (remhash id reins--proposals)
    (pcase outcome
      ("applied" (if (equal (car proposal) "command")
                     (format "✓ command `%s` approved" (cdr proposal))
                   (format "✓ edit %s applied" id)))
      ("partially_applied"
       (let ((left (- (or count (1+ (length hunks))) (length hunks))))
         (format "✓ edit %s: applied %s; %s rejected%s" id
                 (reins--hunks-text hunks (or count (length hunks)))
                 (if (= left 1) "the other hunk was" "the other hunks were")
                 (if (and reason (not (string-empty-p reason))) (format " (%s)" reason) ""))))
      (_ (format "✗ %s %s %s%s" (or (car proposal) "edit") id outcome
                 (if (and reason (not (string-empty-p reason))) (format ": %s" reason) ""))))))

(cl-defmethod eglot-handle-notification (_server (_method (eql reins/event)) &rest params)
  "Show a `reins/event' in `*reins*'."
  (let* ((event (plist-get params :event))
         (type (plist-get event :type)))
    (pcase type
      ("agent_start"
       (reins--insert "\n── reins ──\n")
       (reins--show))
      ("message_update"
       (let ((delta (plist-get event :delta)))
         (pcase (plist-get delta :kind)
           ("text" (reins--insert (plist-get delta :delta)))
           ("retry"
            (reins--insert (format "\n⟳ the model call failed (%s); retrying (%s/%s)…\n"
                                   (plist-get delta :reason) (plist-get delta :attempt)
                                   (plist-get delta :maxRetries)))))))
      ("tool_execution_start"
       (reins--insert (format "\n[%s]\n" (plist-get event :toolName))))
      ("edit_proposed"
       (let* ((edit (plist-get event :edit))
              (hunks (length (plist-get edit :hunks))))
         (puthash (plist-get edit :id)
                  (if (plist-get edit :command) (cons "command" (plist-get edit :command)) (cons "edit" hunks))
                  reins--proposals)
         (reins--insert
          (if (plist-get edit :command)
              (format "\n⏸ run `%s`? M-x reins-accept or M-x reins-reject\n" (plist-get edit :command))
            (format "\n⏸ edit %s (%d hunk%s) waits for your review: M-x eglot-code-actions on its lines\n"
                    (file-name-nondirectory (eglot--uri-to-path (plist-get edit :uri)))
                    hunks (if (= hunks 1) "" "s"))))
         ;; The comments on earlier proposals that this one answers.
         (mapc (lambda (comment)
                 (reins--insert (format "✓ resolved: your comment on hunk %d: %s\n"
                                        (1+ (plist-get comment :hunk)) (plist-get comment :comment))))
               (plist-get edit :resolves))))
      ("edit_commented"
       (let ((comment (plist-get event :comment)))
         (reins--insert (format "\n💬 hunk %d: %s\n" (1+ (plist-get event :hunk))
                                (if (stringp comment) comment "(comment taken back)")))))
      ("edit_resolved"
       (let ((line (reins--resolved-text event)))
         (reins--insert "\n" line "\n")
         (message "reins: %s" line)))
      ("agent_end"
       (let ((error (plist-get event :error)))
         (reins--insert (if (and error (not (string-empty-p error)))
                            (format "\n✗ %s\n" error)
                          "\n")))))))

(defun reins--server-p (server)
  "Whether eglot's SERVER is reins."
  (equal (plist-get (eglot--server-info server) :name) "reins"))

(cl-defmethod eglot-handle-request :around (server (_method (eql workspace/applyEdit)) &rest _)
  "Apply reins's edits without asking again: reins sends one only after you accepted it.
Typing not yet sent to reins is sent first.  Emacs 30's eglot counts a buffer's version only
when it sends a change, so without this an edit made for the text before the unsent typing
would pass its version check and land at old offsets; sent, the edit is refused as stale and
reins re-bases it onto what was typed."
  (when (reins--server-p server)
    (dolist (buffer (eglot--managed-buffers server))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer (eglot--signal-textDocument/didChange)))))
  (let ((eglot-confirm-server-initiated-edits
         (and (not (reins--server-p server)) eglot-confirm-server-initiated-edits)))
    (cl-call-next-method)))

;;; The editor's diagnostics (Flymake), for the agent

(defun reins--keep-flymake-backends ()
  "Put back the Flymake backends Eglot set aside when reins began to manage this buffer."
  (when (and reins-keep-flymake-backends eglot--managed-mode (reins--server-p (eglot-current-server)))
    (dolist (backend (alist-get 'flymake-diagnostic-functions eglot--saved-bindings))
      (unless (or (eq backend t) (memq backend flymake-diagnostic-functions))
        (add-hook 'flymake-diagnostic-functions backend t t)))))

(add-hook 'eglot-managed-mode-hook #'reins--keep-flymake-backends)

(defun reins--own-diagnostic-p (diag)
  "Whether the Flymake DIAG is reins's own (a pending edit's), which reins does not want back."
  (equal (plist-get (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data diag))) :source) "reins"))

(defun reins--lsp-diagnostic (diag)
  "The Flymake DIAG as an LSP Diagnostic, in the server's position encoding."
  (let* ((lsp (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data diag))))
         (severity (flymake--severity (flymake-diagnostic-type diag)))
         (backend (flymake-diagnostic-backend diag))
         (source (or (plist-get lsp :source) (and backend (symbolp backend) (symbol-name backend))))
         (code (plist-get lsp :code)))
    (append (list :range (list :start (eglot--pos-to-lsp-position (flymake-diagnostic-beg diag))
                               :end (eglot--pos-to-lsp-position (flymake-diagnostic-end diag)))
                  :severity (cond ((>= severity (warning-numeric-level :error)) 1)
                                  ((>= severity (warning-numeric-level :warning)) 2)
                                  (t 3))
                  :message (flymake-diagnostic-text diag))
            (when source (list :source source))
            (when code (list :code code)))))

(defun reins--checked-p (buffer)
  "Whether anything besides reins checks BUFFER: a Flymake backend of its own running in it.
A buffer nothing checks is left out of the answer (its problems are unknown, not absent), so
reins does not wait for them to change after an edit."
  (with-current-buffer buffer
    (and (bound-and-true-p flymake-mode)
         (cl-some (lambda (backend) (not (eq backend 'eglot-flymake-backend)))
                  (flymake-running-backends)))))

(defun reins--diagnostics-item (buffer uri)
  "BUFFER's Flymake diagnostics, without reins's own, as a `reins/diagnostics' item for URI."
  (with-current-buffer buffer
    (list :uri uri
          :diagnostics (vconcat (and (bound-and-true-p flymake-mode)
                                     (mapcar #'reins--lsp-diagnostic
                                             (cl-remove-if #'reins--own-diagnostic-p (flymake-diagnostics))))))))

(cl-defmethod eglot-handle-request (server (_method (eql reins/diagnostics)) &key uris &allow-other-keys)
  "Answer with the Flymake diagnostics of the buffers URIS name, or of every buffer SERVER
manages; a file no buffer visits, or one nothing checks, is left out (its problems are
unknown)."
  (list :items
        (vconcat
         (if uris
             (cl-loop for uri across uris
                      for buffer = (and (stringp uri) (find-buffer-visiting (eglot--uri-to-path uri)))
                      when (and buffer (reins--checked-p buffer))
                      collect (reins--diagnostics-item buffer uri))
           (cl-loop for buffer in (eglot--managed-buffers server)
                    when (and (buffer-file-name buffer) (reins--checked-p buffer))
                    collect (reins--diagnostics-item buffer (eglot--path-to-uri (buffer-file-name buffer))))))))

;;; Commands

(defun reins--ask-argument (argument)
  "ARGUMENT of a `reins.ask' command, with a question asked for when it has none."
  (if (plist-get argument :question)
      argument
    (let ((question (read-string "Ask reins about the selection: ")))
      (when (string-empty-p (string-trim question))
        (user-error "No question; nothing was asked"))
      (plist-put (copy-sequence argument) :question question))))

(defun reins--comment-argument (argument)
  "ARGUMENT of a `reins.edit.comment' command, with the comment asked for when it has none."
  (if (plist-get argument :comment)
      argument
    (let ((comment (read-string (format "Comment on hunk %d for the agent: "
                                        (1+ (or (plist-get argument :hunk) 0))))))
      (plist-put (copy-sequence argument) :comment comment))))

(defun reins--complete-argument (command argument)
  "ARGUMENT of reins's COMMAND with what the user types added, for the code actions that carry
none: the question of \"Ask agent about selection\", the comment of \"Comment on this change\"."
  (pcase command
    ("reins.ask" (reins--show) (reins--ask-argument argument))
    ("reins.edit.comment" (reins--comment-argument argument))
    (_ argument)))

;; Emacs 28 and 29: a code action's command runs through `eglot-execute-command'.
(cl-defmethod eglot-execute-command (server (_command (eql reins.ask)) arguments)
  "Ask for the question of \"Ask agent about selection\" when it has none."
  (reins--show)
  (cl-call-next-method server 'reins.ask (vector (reins--ask-argument (aref arguments 0)))))

(cl-defmethod eglot-execute-command (server (_command (eql reins.edit.comment)) arguments)
  "Ask for the comment of \"Comment on this change\" when it has none."
  (cl-call-next-method server 'reins.edit.comment
                       (vector (reins--comment-argument (aref arguments 0)))))

;; Emacs 30: through `eglot-execute', which no longer calls `eglot-execute-command'; a code
;; action comes back to it with its Command, a Command with its ExecuteCommandParams.
(when (fboundp 'eglot-execute)
  (cl-defmethod eglot-execute :around (server action)
    "Ask for what \"Ask agent about selection\" and \"Comment on this change\" leave out."
    (let ((command (plist-get action :command)))
      (if (not (member command '("reins.ask" "reins.edit.comment")))
          (cl-call-next-method)
        (let ((arguments (plist-get action :arguments)))
          (cl-call-next-method
           server (plist-put (copy-sequence action) :arguments
                             (vector (reins--complete-argument command (aref arguments 0))))))))))

(defun reins--pending ()
  "The pending edits of the current server, oldest first."
  (append (jsonrpc-request (eglot--current-server-or-lose) :workspace/executeCommand
                           `(:command "reins.edit.list" :arguments [,(make-hash-table)]))
          nil))

(defun reins-accept ()
  "Accept the latest pending proposal (an edit or a command)."
  (interactive)
  (let ((edit (car (last (reins--pending)))))
    (unless edit (user-error "reins: nothing waits for review"))
    (eglot-execute-command (eglot--current-server-or-lose) 'reins.edit.accept
                           (vector (list :id (plist-get edit :id))))))

(defun reins-reject (reason)
  "Reject the latest pending proposal, telling the agent REASON."
  (interactive "sReject — reason for the agent (optional): ")
  (let ((edit (car (last (reins--pending)))))
    (unless edit (user-error "reins: nothing waits for review"))
    (eglot-execute-command (eglot--current-server-or-lose) 'reins.edit.reject
                           (vector (append (list :id (plist-get edit :id))
                                           (unless (string-empty-p reason) (list :reason reason)))))))

(provide 'reins)
;;; reins.el ends here
