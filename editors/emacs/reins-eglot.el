;;; reins-eglot.el --- reins as eglot's server of some modes (the older set-up)  -*- lexical-binding: t; -*-

;; For Emacs 28 (with eglot from ELPA or Debian's elpa-eglot), 29 and 30.
;;
;; The recommended set-up is reins.el alone: reins beside the buffer's own language server,
;; with a chat, sessions and review of any hunks.  This file is the older one, kept for those who
;; configured it: reins as eglot's server of the modes in `reins-modes'.  Eglot runs one server
;; per major mode, so reins then replaces the language server of those modes.  Load it after
;; reins.el:
;;
;;   (load "/path/to/reins/editors/emacs/reins.el")
;;   (load "/path/to/reins/editors/emacs/reins-eglot.el")
;;
;; `reins-connect', `reins-listen-token(-file)', `reins-command' and
;; `reins-initialization-options' (from reins.el) apply here too.
;;
;; What you get (tested: tests/emacs/eglot-*.el):
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
;;   backends (`python-flymake'…) with its own; this file keeps them running beside it
;;   (`reins-keep-flymake-backends'), so there is something to tell.

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(add-to-list 'load-path (file-name-directory (or load-file-name buffer-file-name)))
(require 'reins)

(defcustom reins-modes '(python-mode python-ts-mode js-mode typescript-ts-mode)
  "Major modes whose buffers eglot connects to reins."
  :type '(repeat symbol))

(defvar reins-answer-buffer "*reins*"
  "Where the runs of reins are shown.")

(defcustom reins-keep-flymake-backends t
  "Keep a buffer's own Flymake backends running when reins manages it.
Eglot replaces them with its own, which shows only reins's proposals; kept, they still mark
problems, and reins can tell the agent what its edits broke."
  :type 'boolean)

(defun reins-eglot--initialization-options ()
  "The initializationOptions: `reins-initialization-options', and what reins.el does besides
LSP: it answers `reins/diagnostics' from Flymake."
  (append '(:capabilities (:diagnostics t)) reins-initialization-options))

(defun reins-eglot--contact ()
  "How eglot reaches reins: it starts `reins-command', or connects as `reins-connect' says.
A connection is eglot's (CLASS :process FUNCTION …): its (HOST PORT) form takes no
initializationOptions, which carry the token."
  (pcase reins-connect
    ('nil (append reins-command (list :initializationOptions (reins-eglot--initialization-options))))
    ((pred stringp)
     (let ((path (expand-file-name reins-connect)))
       `(eglot-lsp-server
         :process ,(lambda () (make-network-process :name "reins" :family 'local :service path
                                                    :coding 'utf-8-emacs-unix :noquery t))
         :initializationOptions ,(reins-eglot--initialization-options))))
    (`(,host ,port)
     `(eglot-lsp-server
       :process ,(lambda () (open-network-stream "reins" nil host port :coding 'utf-8-emacs-unix))
       :initializationOptions ,(append (list :token (reins--listen-token)) (reins-eglot--initialization-options))))
    (_ (user-error "reins: `reins-connect' is %S, not nil, (HOST PORT) or a socket's path" reins-connect))))

(add-to-list 'eglot-server-programs
             `(,reins-modes . ,(lambda (&optional _interactive) (reins-eglot--contact))))
;;; The *reins* buffer

(define-derived-mode reins-output-mode special-mode "reins"
  "The runs of reins: answers, tool calls, proposals, failures."
  (setq-local truncate-lines nil)
  (visual-line-mode 1))

(defun reins-eglot--output ()
  "The `*reins*' buffer, created when needed."
  (or (get-buffer reins-answer-buffer)
      (with-current-buffer (get-buffer-create reins-answer-buffer)
        (reins-output-mode)
        (current-buffer))))

(defun reins-eglot--insert (&rest strings)
  "Append STRINGS to `*reins*', keeping windows that showed its end at the end."
  (with-current-buffer (reins-eglot--output)
    (let* ((inhibit-read-only t)
           (following (cl-remove-if-not (lambda (w) (>= (window-point w) (point-max)))
                                        (get-buffer-window-list (current-buffer) nil t))))
      (save-excursion
        (goto-char (point-max))
        (apply #'insert strings))
      (dolist (w following)
        (set-window-point w (point-max))))))

(defun reins-eglot--show ()
  "Show `*reins*' without selecting it."
  (display-buffer (reins-eglot--output) '(nil (inhibit-same-window . t))))

(defvar reins-eglot--proposals (make-hash-table :test #'equal)
  "Pending edit id -> what it is: (\"edit\" . HUNKS) or (\"command\" . COMMAND).")

(defun reins-eglot--resolved-text (event)
  "One line saying how the pending edit of the edit_resolved EVENT ended."
  (let* ((id (plist-get event :id))
         (outcome (plist-get event :outcome))
         (hunks (append (plist-get event :hunks) nil))
         (proposal (gethash id reins-eglot--proposals))
         (count (and (equal (car proposal) "edit") (cdr proposal)))
         (reason (plist-get event :reason)))
    (remhash id reins-eglot--proposals)
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

(defvar reins-eglot--session nil
  "(SERVER . SESSION) of the last run shown in `*reins*': asks to SERVER continue SESSION.")

(cl-defmethod eglot-handle-notification (server (_method (eql reins/event)) &rest params)
  "Show a `reins/event' in `*reins*'."
  (let* ((event (plist-get params :event))
         (type (plist-get event :type)))
    (pcase type
      ("agent_start"
       (unless (plist-get params :parentSessionId)
         (setq reins-eglot--session (cons server (plist-get params :sessionId))))
       (reins-eglot--insert "\n── reins ──\n")
       (reins-eglot--show))
      ("message_update"
       (let ((delta (plist-get event :delta)))
         (pcase (plist-get delta :kind)
           ("text" (reins-eglot--insert (plist-get delta :delta)))
           ("retry"
            (reins-eglot--insert (format "\n⟳ the model call failed (%s); retrying (%s/%s)…\n"
                                   (plist-get delta :reason) (plist-get delta :attempt)
                                   (plist-get delta :maxRetries)))))))
      ("tool_execution_start"
       (reins-eglot--insert (format "\n[%s]\n" (plist-get event :toolName))))
      ("edit_proposed"
       (let* ((edit (plist-get event :edit))
              (hunks (length (plist-get edit :hunks))))
         (puthash (plist-get edit :id)
                  (if (plist-get edit :command) (cons "command" (plist-get edit :command)) (cons "edit" hunks))
                  reins-eglot--proposals)
         (reins-eglot--insert
          (if (plist-get edit :command)
              (format "\n⏸ run `%s`? M-x reins-accept or M-x reins-reject\n" (plist-get edit :command))
            (format "\n⏸ edit %s (%d hunk%s) waits for your review: M-x eglot-code-actions on its lines\n"
                    (file-name-nondirectory (eglot--uri-to-path (plist-get edit :uri)))
                    hunks (if (= hunks 1) "" "s"))))
         ;; The comments on earlier proposals that this one answers.
         (mapc (lambda (comment)
                 (reins-eglot--insert (format "✓ resolved: your comment on hunk %d: %s\n"
                                              (1+ (plist-get comment :hunk)) (plist-get comment :comment))))
               (plist-get edit :resolves))))
      ("edit_commented"
       (let ((comment (plist-get event :comment)))
         (reins-eglot--insert (format "\n💬 hunk %d: %s\n" (1+ (plist-get event :hunk))
                                      (if (stringp comment) comment "(comment taken back)")))))
      ("edit_resolved"
       (let ((line (reins-eglot--resolved-text event)))
         (reins-eglot--insert "\n" line "\n")
         (message "reins: %s" line)))
      ("agent_end"
       (let ((error (plist-get event :error)))
         (reins-eglot--insert (if (and error (not (string-empty-p error)))
                            (format "\n✗ %s\n" error)
                          "\n")))))))

(defun reins-eglot--server-p (server)
  "Whether eglot's SERVER is reins."
  (equal (plist-get (eglot--server-info server) :name) "reins"))

(cl-defmethod eglot-handle-request :around (server (_method (eql workspace/applyEdit)) &rest _)
  "Apply reins's edits without asking again: reins sends one only after you accepted it.
Typing not yet sent to reins is sent first.  Emacs 30's eglot counts a buffer's version only
when it sends a change, so without this an edit made for the text before the unsent typing
would pass its version check and land at old offsets; sent, the edit is refused as stale and
reins re-bases it onto what was typed."
  (when (reins-eglot--server-p server)
    (dolist (buffer (eglot--managed-buffers server))
      (when (buffer-live-p buffer)
        (with-current-buffer buffer (eglot--signal-textDocument/didChange)))))
  (let ((eglot-confirm-server-initiated-edits
         (and (not (reins-eglot--server-p server)) eglot-confirm-server-initiated-edits)))
    (cl-call-next-method)))

;;; The editor's diagnostics (Flymake), for the agent

(defun reins-eglot--keep-flymake-backends ()
  "Put back the Flymake backends Eglot set aside when reins began to manage this buffer."
  (when (and reins-keep-flymake-backends eglot--managed-mode (reins-eglot--server-p (eglot-current-server)))
    (dolist (backend (alist-get 'flymake-diagnostic-functions eglot--saved-bindings))
      (unless (or (eq backend t) (memq backend flymake-diagnostic-functions))
        (add-hook 'flymake-diagnostic-functions backend t t)))))

(add-hook 'eglot-managed-mode-hook #'reins-eglot--keep-flymake-backends)

(defun reins-eglot--lsp-diagnostic (diag)
  "The Flymake DIAG as an LSP Diagnostic, in the server's position encoding."
  (reins--lsp-diagnostic diag #'eglot--pos-to-lsp-position))

(defun reins-eglot--checked-p (buffer)
  "Whether anything besides reins checks BUFFER: a Flymake backend of its own running in it.
A buffer nothing checks is left out of the answer (its problems are unknown, not absent), so
reins does not wait for them to change after an edit."
  (with-current-buffer buffer
    (and (bound-and-true-p flymake-mode)
         (cl-some (lambda (backend) (not (eq backend 'eglot-flymake-backend)))
                  (flymake-running-backends)))))

(defun reins-eglot--diagnostics-item (buffer uri)
  "BUFFER's Flymake diagnostics, without reins's own, as a `reins/diagnostics' item for URI."
  (with-current-buffer buffer
    (list :uri uri
          :diagnostics (vconcat (and (bound-and-true-p flymake-mode)
                                     (mapcar #'reins-eglot--lsp-diagnostic
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
                      when (and buffer (reins-eglot--checked-p buffer))
                      collect (reins-eglot--diagnostics-item buffer uri))
           (cl-loop for buffer in (eglot--managed-buffers server)
                    when (and (buffer-file-name buffer) (reins-eglot--checked-p buffer))
                    collect (reins-eglot--diagnostics-item buffer (eglot--path-to-uri (buffer-file-name buffer))))))))

;;; Commands

(defun reins-eglot-new-session ()
  "Make the next ask about code start a new session."
  (interactive)
  (setq reins-eglot--session nil)
  (message "reins: the next ask starts a new session"))

(defun reins-eglot--ask-argument (server argument)
  "ARGUMENT of a `reins.ask' command to SERVER, with a question asked for when it has none, and
the session of SERVER's last run, so that the ask follows up on it rather than starting anew."
  (let ((argument (copy-sequence argument)))
    (unless (plist-get argument :question)
      (let ((question (read-string "Ask reins about the selection: ")))
        (when (string-empty-p (string-trim question))
          (user-error "No question; nothing was asked"))
        (setq argument (plist-put argument :question question))))
    (when (and (eq (car reins-eglot--session) server) (not (plist-get argument :sessionId)))
      (setq argument (plist-put argument :sessionId (cdr reins-eglot--session))))
    argument))

;; What a code action's command leaves out and the user types.
(defun reins-eglot--comment-argument (argument)
  "ARGUMENT of a `reins.edit.comment' command, with the comment asked for when it has none."
  (if (plist-get argument :comment)
      argument
    (let ((comment (read-string (format "Comment on hunk %d for the agent: "
                                        (1+ (or (plist-get argument :hunk) 0))))))
      (plist-put (copy-sequence argument) :comment comment))))

(defun reins-eglot--complete-argument (server command argument)
  "ARGUMENT of reins's COMMAND to SERVER with what the user types added, for the code actions
that carry none: the question of \"Ask agent about selection\", the comment of \"Comment on this
change\"."
  (pcase command
    ("reins.ask" (reins-eglot--show) (reins-eglot--ask-argument server argument))
    ("reins.edit.comment" (reins-eglot--comment-argument argument))
    (_ argument)))

;; Emacs 28 and 29: a code action's command runs through `eglot-execute-command'.
(cl-defmethod eglot-execute-command (server (_command (eql reins.ask)) arguments)
  "Ask for the question of \"Ask agent about selection\" when it has none."
  (cl-call-next-method server 'reins.ask
                       (vector (reins-eglot--complete-argument server "reins.ask" (aref arguments 0)))))

(cl-defmethod eglot-execute-command (server (_command (eql reins.edit.comment)) arguments)
  "Ask for the comment of \"Comment on this change\" when it has none."
  (cl-call-next-method server 'reins.edit.comment
                       (vector (reins-eglot--complete-argument server "reins.edit.comment"
                                                               (aref arguments 0)))))

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
                             (vector (reins-eglot--complete-argument server command
                                                                     (aref arguments 0))))))))))

(defun reins-eglot--pending ()
  "The pending edits of the current server, oldest first."
  (append (jsonrpc-request (eglot--current-server-or-lose) :workspace/executeCommand
                           `(:command "reins.edit.list" :arguments [,(make-hash-table)]))
          nil))

(defun reins-accept ()
  "Accept the latest pending proposal (an edit or a command)."
  (interactive)
  (let ((edit (car (last (reins-eglot--pending)))))
    (unless edit (user-error "reins: nothing waits for review"))
    (eglot-execute-command (eglot--current-server-or-lose) 'reins.edit.accept
                           (vector (list :id (plist-get edit :id))))))

(defun reins-reject (reason)
  "Reject the latest pending proposal, telling the agent REASON."
  (interactive "sReject — reason for the agent (optional): ")
  (let ((edit (car (last (reins-eglot--pending)))))
    (unless edit (user-error "reins: nothing waits for review"))
    (eglot-execute-command (eglot--current-server-or-lose) 'reins.edit.reject
                           (vector (append (list :id (plist-get edit :id))
                                           (unless (string-empty-p reason) (list :reason reason)))))))

(provide 'reins-eglot)
;;; reins-eglot.el ends here
