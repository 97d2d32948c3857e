;;; reins-chat.el --- the chat with reins: one buffer per project, one session at a time  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  The transcript sits above a line of keys and is read-only; the
;; prompt is what you type below that line.  The chat follows one session: each message you
;; send continues it, a message sent while a turn runs follows when it ends, and asks about code
;; (`reins-ask') land in it too.  What a run does arrives as `reins/event' notifications and is
;; written into the transcript as it happens.

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)

(declare-function reins-ensure-connection "reins")
(declare-function reins--hunks-text "reins")
(declare-function reins--uri-to-path "reins")
(declare-function reins-execute "reins")
(declare-function reins-review "reins-review")
(declare-function reins-sessions "reins-sessions")
(declare-function reins-tree "reins-sessions")
(declare-function reins-execute-async "reins")
(declare-function reins--root "reins")
(declare-function reins-connection-root "reins")
(defvar reins-event-functions)
(defvar reins-ask-functions)

(defface reins-chat-user '((t :inherit bold))
  "Your messages in the chat."
  :group 'reins)
(defface reins-chat-tool '((t :inherit shadow))
  "Tool calls in the chat."
  :group 'reins)
(defface reins-chat-error '((t :inherit error))
  "Failures in the chat."
  :group 'reins)
(defface reins-chat-notice '((t :inherit warning))
  "Proposals waiting, cancellations and other notices in the chat."
  :group 'reins)
(defface reins-chat-separator '((t :inherit shadow))
  "The line between the transcript and the prompt."
  :group 'reins)

(defvar-local reins-chat--connection nil "The connection this chat talks to.")
(defvar-local reins-chat--session nil "The session the chat follows, or nil before the first message.")
(defvar-local reins-chat--running nil "Whether a run of the session is under way.")
(defvar-local reins-chat--model nil "The model that answered last, as the header shows it.")
(defvar-local reins-chat--output nil "Where the transcript grows: the end of it.")
(defvar-local reins-chat--prompt nil "Where the prompt starts.")
(defvar-local reins-chat--last nil "The kind of the last thing written: user, text, tool, notice.")
(defvar-local reins-chat--tools nil "Tool call id -> the marker of its status mark.")
(defvar-local reins-chat--todo nil "(START . END) of the todo list, changed in place.")
(defvar-local reins-chat--proposals nil "Pending edit id -> what it is, in a few words.")
(defvar-local reins-chat--reviewed nil "Tool call ids whose proposal the transcript reports.")

(defvar reins-chat-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'reins-chat-send)
    (define-key map (kbd "C-c C-k") #'reins-chat-cancel)
    (define-key map (kbd "C-c C-n") #'reins-chat-new)
    (define-key map (kbd "C-c C-r") #'reins-review)
    (define-key map (kbd "C-c C-s") #'reins-sessions)
    (define-key map (kbd "C-c C-t") #'reins-tree)
    map)
  "Keys of the chat.")

(define-derived-mode reins-chat-mode text-mode "reins-chat"
  "The chat with reins.  Type below the line; \\[reins-chat-send] sends, \\[reins-chat-cancel]
cancels the running turn, \\[reins-chat-new] starts a new session.

\\{reins-chat-mode-map}"
  (setq-local truncate-lines nil)
  (visual-line-mode 1)
  (setq-local header-line-format '(:eval (reins-chat--header))))

(defun reins-chat--separator ()
  "The line between transcript and prompt, naming the keys."
  (concat (propertize (substitute-command-keys
                       "── \\<reins-chat-mode-map>\\[reins-chat-send] send · \\[reins-chat-cancel] cancel · \\[reins-sessions] sessions · \\[reins-tree] tree · C-h m more")
                      'face 'reins-chat-separator)
          "\n"))

(defun reins-chat--header ()
  "The header line: the project, the session and whether it runs.
A `%' in the project's or the model's name is doubled: the header line would read it as a
mode-line construct."
  (string-replace
   "%" "%%"
   (format " reins · %s · %s%s%s"
           (file-name-nondirectory (directory-file-name (reins-connection-root reins-chat--connection)))
           (if reins-chat--session (concat "session " (substring reins-chat--session 0 (min 8 (length reins-chat--session))))
             "new session")
           (if reins-chat--model (concat " · " reins-chat--model) "")
           (if reins-chat--running " · running…" ""))))

(defun reins-chat--buffer-name (root)
  (format "*reins chat: %s*" (file-name-nondirectory (directory-file-name root))))

(defun reins-chat--find (connection)
  "The chat buffer of CONNECTION, or nil."
  (cl-find-if (lambda (buffer)
                (and (eq (buffer-local-value 'major-mode buffer) 'reins-chat-mode)
                     (eq (buffer-local-value 'reins-chat--connection buffer) connection)))
              (buffer-list)))

(defun reins-chat--orphan (connection)
  "A chat buffer of CONNECTION's project whose reins has stopped, or nil."
  (cl-find-if (lambda (buffer)
                (and (eq (buffer-local-value 'major-mode buffer) 'reins-chat-mode)
                     (let ((old (buffer-local-value 'reins-chat--connection buffer)))
                       (and (not (jsonrpc-running-p old))
                            (equal (reins-connection-root old) (reins-connection-root connection))))))
              (buffer-list)))

(defun reins-chat--adopt (buffer connection)
  "Make BUFFER, a chat whose reins stopped, talk to CONNECTION: its session opened there again."
  (with-current-buffer buffer
    (setq reins-chat--connection connection
          reins-chat--running nil)
    (when reins-chat--session
      (condition-case err
          (reins-execute connection "reins.session.open" (list :sessionId reins-chat--session))
        (error (reins-chat--line 'notice (format "✗ the session could not be opened again (%s); the next message starts a new one"
                                                 (error-message-string err))
                                 'reins-chat-error)
               (setq reins-chat--session nil))))
    buffer))

(defun reins-chat--buffer (connection)
  "The chat buffer of CONNECTION, made when there is none."
  (or (reins-chat--find connection)
      (let ((orphan (reins-chat--orphan connection)))
        (and orphan (reins-chat--adopt orphan connection)))
      (with-current-buffer (get-buffer-create (reins-chat--buffer-name (reins-connection-root connection)))
        (reins-chat-mode)
        (setq reins-chat--connection connection
              default-directory (reins-connection-root connection))
        (reins-chat--reset)
        (current-buffer))))

(defun reins-chat--reset ()
  "Empty the transcript (the prompt is kept)."
  (let ((inhibit-read-only t)
        (prompt (if reins-chat--prompt (buffer-substring-no-properties reins-chat--prompt (point-max)) "")))
    (erase-buffer)
    (setq reins-chat--last nil
          reins-chat--tools (make-hash-table :test #'equal)
          reins-chat--todo nil
          reins-chat--proposals (make-hash-table :test #'equal)
          reins-chat--reviewed (make-hash-table :test #'equal))
    (insert (propertize (reins-chat--separator) 'read-only t 'front-sticky t 'rear-nonsticky t))
    (setq reins-chat--prompt (copy-marker (point))
          ;; Made after the separator, so that what is written at it goes before the separator.
          reins-chat--output (copy-marker (point-min) t))
    (insert prompt)))

(defun reins-chat (&optional root)
  "Open the chat of the current project (ROOT), starting reins there when needed."
  (interactive)
  (let ((buffer (reins-chat--buffer (reins-ensure-connection root))))
    (pop-to-buffer buffer)
    (when (< (point) reins-chat--prompt) (goto-char (point-max)))
    buffer))

;;; Writing the transcript

(defun reins-chat--insert (kind text &optional face)
  "Append TEXT, a piece of KIND (user, text, tool, notice), to the transcript.
A new kind starts on a line of its own; your messages and the answers after them have a blank
line before them."
  (let ((inhibit-read-only t))
    (save-excursion
      (goto-char reins-chat--output)
      (unless (eq kind reins-chat--last)
        (unless (or (bobp) (eq (char-before) ?\n)) (insert (propertize "\n" 'read-only t)))
        (when (and (not (bobp)) (or (eq kind 'user) (and (eq kind 'text) (memq reins-chat--last '(user user-line)))))
          (insert (propertize "\n" 'read-only t))))
      (insert (propertize text 'read-only t 'front-sticky '(read-only) 'face face))
      (setq reins-chat--last kind))))

(defun reins-chat--line (kind text &optional face)
  "Append TEXT as a line of its own."
  (reins-chat--insert kind (concat (string-trim-right text) "\n") face)
  ;; The next piece of any kind starts on a fresh line.
  (setq reins-chat--last (intern (format "%s-line" kind))))

(defun reins-chat--one-line (text &optional max)
  "TEXT on one line, at most MAX characters."
  (let ((line (replace-regexp-in-string "[ \t\n\r]+" " " (string-trim (or text "")))))
    (if (and max (> (length line) max)) (concat (substring line 0 (1- max)) "…") line)))

(defun reins-chat--tool-subject (args)
  "What a tool call with ARGS is about, in a few words: its path, command or pattern."
  (let ((subject (or (plist-get args :command) (plist-get args :path) (plist-get args :pattern)
                     (plist-get args :query) (plist-get args :url)
                     (cl-loop for (_k v) on args by #'cddr when (stringp v) return v))))
    (reins-chat--one-line (if (stringp subject) subject "") 60)))

(defun reins-chat--tool-start (id name args)
  "A line for the tool call ID (NAME with ARGS), its mark `⋯' until it ends."
  (reins-chat--insert 'tool "  ")
  (puthash id (copy-marker reins-chat--output) reins-chat--tools)
  (reins-chat--line 'tool (format "⋯ %s %s" name (reins-chat--tool-subject args)) 'reins-chat-tool))

(defun reins-chat--tool-end (id failed why)
  "Mark the tool call ID done (✓) or FAILED (✗, with WHY on its line)."
  (let ((marker (gethash id reins-chat--tools)))
    (when marker
      (let ((inhibit-read-only t))
        (save-excursion
          (goto-char marker)
          (delete-char 1)
          (insert (propertize (if failed "✗" "✓") 'read-only t 'face (if failed 'reins-chat-error 'reins-chat-tool)))
          (when (and failed why)
            (end-of-line)
            (insert (propertize (concat " — " (reins-chat--one-line why 100)) 'read-only t 'face 'reins-chat-error))))
        ;; Done with: a marker kept would slow every insertion of a long session.
        (set-marker marker nil)
        (remhash id reins-chat--tools)))))

(defun reins-chat--settle-tools ()
  "Mark the tool calls that never ended (the run was cancelled or failed) with ■.
The run's calls are then forgotten, so what is kept per call does not grow with the session."
  (let ((inhibit-read-only t))
    (maphash (lambda (_id marker)
               (when (eq (char-after marker) ?⋯)
                 (save-excursion
                   (goto-char marker)
                   (delete-char 1)
                   (insert (propertize "■" 'read-only t 'face 'reins-chat-notice))))
               (set-marker marker nil))
             reins-chat--tools))
  (clrhash reins-chat--tools)
  (clrhash reins-chat--reviewed))

(defun reins-chat--todo-text (todos)
  "The todo list TODOS: how far along it is, then a line per step."
  (let ((done (cl-count "completed" todos :key (lambda (item) (plist-get item :status)) :test #'equal)))
    (if (null todos)
        "☰ todo list cleared\n"
      (concat (format "☰ todo %d/%d\n" done (length todos))
              (mapconcat (lambda (item)
                           (format "  %s %s\n"
                                   (pcase (plist-get item :status) ("completed" "✓") ("in_progress" "▶") (_ "○"))
                                   (plist-get item :content)))
                         todos "")))))

(defun reins-chat--todo (todos)
  "Show TODOS: one list per chat, changed in place."
  (let ((text (propertize (reins-chat--todo-text todos) 'read-only t 'face 'reins-chat-notice))
        (inhibit-read-only t))
    (if reins-chat--todo
        (save-excursion
          (goto-char (car reins-chat--todo))
          (delete-region (car reins-chat--todo) (cdr reins-chat--todo))
          (insert text)
          (set-marker (cdr reins-chat--todo) (point)))
      (reins-chat--insert 'todo "")
      (let ((start (copy-marker reins-chat--output)))
        (reins-chat--insert 'todo text)
        (setq reins-chat--todo (cons start (copy-marker reins-chat--output)))
        (setq reins-chat--last 'todo-line)))))

(defun reins-chat--content-text (content)
  "The text blocks of a message's CONTENT, joined."
  (mapconcat (lambda (block) (if (equal (plist-get block :type) "text") (or (plist-get block :text) "") ""))
             (append content nil) ""))

(defun reins-chat--user (message)
  "Your MESSAGE, as sent."
  (reins-chat--line 'user (concat "❯ " (reins-chat--content-text (plist-get message :content))) 'reins-chat-user))

(defun reins-chat--file-name (uri)
  (let ((path (reins--uri-to-path uri)))
    (if path (file-relative-name path (reins-connection-root reins-chat--connection)) (or uri "?"))))

(defun reins-chat--proposal-text (edit)
  "What the pending EDIT is, in a few words."
  (cond ((plist-get edit :command) (format "command `%s`" (plist-get edit :command)))
        ((plist-get edit :call) (let ((call (plist-get edit :call)))
                                  (format "call %s/%s" (plist-get call :server) (plist-get call :tool))))
        (t (format "%s %s" (plist-get edit :tool) (reins-chat--file-name (plist-get edit :uri))))))

(defun reins-chat--resolved-text (event)
  "One line saying how the pending edit of the edit_resolved EVENT ended."
  (let* ((proposal (gethash (plist-get event :id) reins-chat--proposals))
         (what (or (car proposal) (format "edit %s" (plist-get event :id))))
         (count (cdr proposal))
         (hunks (append (plist-get event :hunks) nil))
         (reason (plist-get event :reason))
         (because (if (and reason (not (string-empty-p reason))) (format " (%s)" reason) "")))
    (pcase (plist-get event :outcome)
      ("applied" (format "✓ %s applied" what))
      ("partially_applied"
       (let ((left (- (or count (1+ (length hunks))) (length hunks))))
         (format "✓ %s: applied %s; %s rejected%s" what (reins--hunks-text hunks (or count (length hunks)))
                 (if (= left 1) "the other hunk was" "the other hunks were") because)))
      (outcome (format "✗ %s %s%s" what outcome
                       (if (and reason (not (string-empty-p reason))) (format ": %s" reason) ""))))))

;;; Events

(defun reins-chat--on-event (connection params)
  "Write the `reins/event' PARAMS of CONNECTION into the chat following its session."
  (let* ((event (plist-get params :event))
         (type (plist-get event :type))
         (session (plist-get params :sessionId))
         (buffer (reins-chat--find connection)))
    (when (and buffer (buffer-live-p buffer))
      (with-current-buffer buffer
        (cond
         ((member type '("connection_closed" "show_message"))
          (reins-chat--global-event type event))
         ((and session (equal session reins-chat--session) (not (plist-get params :parentSessionId)))
          (reins-chat--session-event event)
          (force-mode-line-update)))))))

(defun reins-chat--global-event (type event)
  "An EVENT of TYPE about reins itself rather than a run."
  (pcase type
    ("connection_closed"
     (setq reins-chat--running nil)
     (let ((status (plist-get event :status))
           (log (plist-get event :log)))
       (if (memq status '(0 nil))
           (reins-chat--line 'notice "■ reins stopped; M-x reins-chat starts it again" 'reins-chat-notice)
         (reins-chat--line 'notice (format "✗ reins exited (status %s); M-x reins-chat starts it again%s"
                                           status (if log (format " (its log: %s)" (string-trim log)) ""))
                           'reins-chat-error))))
    ("show_message"
     (when (memq (plist-get event :level) '(1 2))
       (reins-chat--line 'notice (concat "! " (reins-chat--one-line (plist-get event :message))) 'reins-chat-notice)))))

(defun reins-chat--session-event (event)
  "An EVENT of the chat's session."
  (pcase (plist-get event :type)
    ("agent_start" (setq reins-chat--running t))
    ("message_start"
     (when (equal (plist-get (plist-get event :message) :role) "user")
       (reins-chat--user (plist-get event :message))))
    ("message_end"
     (let ((model (plist-get (plist-get event :message) :model)))
       (when (stringp model) (setq reins-chat--model model))))
    ("message_update"
     (let ((delta (plist-get event :delta)))
       (pcase (plist-get delta :kind)
         ("text" (reins-chat--insert 'text (plist-get delta :delta)))
         ;; The model's reasoning is not the answer: a sign of life, once per stretch of it.
         ("thinking"
          (unless (eq reins-chat--last 'thinking-line)
            (reins-chat--line 'thinking "… thinking" 'reins-chat-tool)))
         ("retry"
          (reins-chat--line 'notice (format "⟳ the model call failed (%s); retrying (%s/%s)…"
                                            (reins-chat--one-line (plist-get delta :reason) 80)
                                            (plist-get delta :attempt) (plist-get delta :maxRetries))
                            'reins-chat-notice)))))
    ("tool_execution_start"
     ;; The todo list shows itself (todo_update): a line for its call would say nothing more.
     (unless (equal (plist-get event :toolName) "todo")
       (reins-chat--tool-start (plist-get event :toolCallId) (plist-get event :toolName) (plist-get event :args))))
    ("tool_execution_end"
     (let ((result (plist-get event :result)))
       (reins-chat--tool-end (plist-get event :toolCallId) (eq (plist-get event :isError) t)
                             (unless (gethash (plist-get event :toolCallId) reins-chat--reviewed)
                               (reins-chat--content-text (plist-get result :content))))))
    ("todo_update" (reins-chat--todo (append (plist-get event :todos) nil)))
    ("edit_proposed"
     (let* ((edit (plist-get event :edit))
            (what (reins-chat--proposal-text edit))
            (hunks (length (plist-get edit :hunks))))
       (puthash (plist-get edit :id) (cons what hunks) reins-chat--proposals)
       ;; Its outcome gets a line of its own: the call's line need not repeat it.
       (when (plist-get edit :toolCallId) (puthash (plist-get edit :toolCallId) t reins-chat--reviewed))
       (reins-chat--line 'notice
                         (if (plist-get edit :uri)
                             (format "  ⏸ %s: %d hunk%s wait for your review in *reins review*"
                                     what hunks (if (= hunks 1) "" "s"))
                           (format "  ⏸ %s waits for your review in *reins review*" what))
                         'reins-chat-notice)))
    ("edit_resolved"
     (let ((line (reins-chat--resolved-text event)))
       (reins-chat--line 'notice (concat "  " line) (if (string-prefix-p "✓" line) 'reins-chat-tool 'reins-chat-error))
       (remhash (plist-get event :id) reins-chat--proposals)))
    ("agent_end"
     (setq reins-chat--running nil)
     (reins-chat--settle-tools)
     (let ((error (plist-get event :error))
           (reason (plist-get event :reason)))
       (cond ((and (stringp error) (not (string-empty-p error)))
              (reins-chat--line 'notice (concat "✗ " (reins-chat--one-line error)) 'reins-chat-error))
             ((equal reason "aborted") (reins-chat--line 'notice "■ cancelled" 'reins-chat-notice))
             ((not (member reason '("final_answer" "tool_observations" nil)))
              (reins-chat--line 'notice (concat "■ stopped: " (replace-regexp-in-string "_" " " reason))
                                'reins-chat-notice))
             (t (reins-chat--insert 'end "")))))))

(add-hook 'reins-event-functions #'reins-chat--on-event)

;;; Sending

(defun reins-chat--ensure-session ()
  "The chat's session, made now when it has none."
  (or reins-chat--session
      (setq reins-chat--session
            (plist-get (reins-execute reins-chat--connection "reins.session.new" nil) :sessionId))))

(defun reins-chat--failed (buffer)
  "A function that writes a failed request's message into BUFFER's transcript."
  (lambda (text)
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (reins-chat--line 'notice (concat "✗ " (reins-chat--one-line text)) 'reins-chat-error)))))

(defun reins-chat-send ()
  "Send the prompt: a new message in the chat's session, or, while a turn runs, a follow-up
that is read when it ends."
  (interactive)
  (let ((text (string-trim (buffer-substring-no-properties reins-chat--prompt (point-max))))
        (buffer (current-buffer)))
    (when (string-empty-p text) (user-error "reins: type a message below the line first"))
    ;; reins stopped since: start it again, the session opened there anew.
    (unless (jsonrpc-running-p reins-chat--connection)
      (reins-chat--adopt buffer (reins-ensure-connection (reins-connection-root reins-chat--connection))))
    (let ((session (reins-chat--ensure-session))
          (inhibit-read-only t))
      (delete-region reins-chat--prompt (point-max))
      (if reins-chat--running
          (progn
            (reins-execute-async reins-chat--connection "reins.chat.followUp"
                                 (list :sessionId session :text text) #'ignore (reins-chat--failed buffer))
            (message "reins: queued; it follows when this turn ends"))
        (setq reins-chat--running t)
        (reins-execute-async reins-chat--connection "reins.chat.send" (list :sessionId session :text text)
                             #'ignore
                             (lambda (why)
                               (when (buffer-live-p buffer)
                                 (with-current-buffer buffer (setq reins-chat--running nil)))
                               (funcall (reins-chat--failed buffer) why)))))))

(defun reins-chat-cancel ()
  "Cancel the running turn of the chat's session."
  (interactive)
  (unless reins-chat--session (user-error "reins: nothing runs yet"))
  (reins-execute-async reins-chat--connection "reins.chat.cancel" (list :sessionId reins-chat--session)
                       (lambda (result)
                         (unless (eq (plist-get result :cancelled) t)
                           (message "reins: nothing was running")))))

(defun reins-chat-new ()
  "Start over in a new session (the next message starts it)."
  (interactive)
  (setq reins-chat--session nil reins-chat--running nil)
  (reins-chat--reset)
  (goto-char (point-max)))

(defun reins-chat-set-prompt (text)
  "Put TEXT in the prompt, to edit and send."
  (let ((inhibit-read-only t))
    (delete-region reins-chat--prompt (point-max))
    (save-excursion (goto-char reins-chat--prompt) (insert text))))

(defun reins-chat--session-for-ask (connection _root)
  "The chat's session for an ask about code: the chat is shown, and its session made if needed."
  (let ((buffer (reins-chat--buffer connection)))
    (display-buffer buffer '(nil (inhibit-same-window . t)))
    (with-current-buffer buffer (reins-chat--ensure-session))))

(add-hook 'reins-ask-functions #'reins-chat--session-for-ask)

(provide 'reins-chat)
;;; reins-chat.el ends here
