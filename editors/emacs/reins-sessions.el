;;; reins-sessions.el --- reins's sessions: pick one to continue, and its tree  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  `reins-sessions' lists the project's sessions, newest first;
;; the one you pick opens in the chat with its conversation, and the next message continues it.
;; `reins-tree' draws the chat's session as a tree: entries one a line, `├─'/`└─' where it
;; branches, the current position marked.  On an entry, RET checks it out (the session continues
;; from there, and the files the agent changed come back to how they were then, each proposed in
;; *reins review*), f forks a new session from it.  At one of your messages both land before it
;; and give its text back to the chat's prompt, to edit and send again.

(require 'cl-lib)
(require 'subr-x)

(declare-function reins-ensure-connection "reins")
(declare-function reins-execute "reins")
(declare-function reins-connection-root "reins")
(declare-function reins-chat "reins-chat")
(declare-function reins-chat--buffer "reins-chat")
(declare-function reins-chat--reset "reins-chat")
(declare-function reins-chat--user "reins-chat")
(declare-function reins-chat--insert "reins-chat")
(declare-function reins-chat--line "reins-chat")
(declare-function reins-chat--tool-start "reins-chat")
(declare-function reins-chat--tool-end "reins-chat")
(declare-function reins-chat--todo "reins-chat")
(declare-function reins-chat--one-line "reins-chat")
(declare-function reins-chat--content-text "reins-chat")
(declare-function reins-chat-set-prompt "reins-chat")
(defvar reins-chat--connection)
(defvar reins-chat--session)
(defvar reins-chat--running)
(defvar reins-chat--model)
(defvar reins-event-functions)

;;; The list

(defun reins-sessions--describe (session)
  "One line for SESSION of `reins.session.list'."
  (let ((title (or (plist-get session :name) (plist-get session :firstMessage) "(empty)")))
    (format "%s · %d entries · %s · %s"
            (reins-chat--one-line title 60)
            (or (plist-get session :entryCount) 0)
            (format-time-string "%Y-%m-%d %H:%M" (/ (or (plist-get session :modified) 0) 1000.0))
            (substring (plist-get session :id) 0 (min 8 (length (plist-get session :id)))))))

(defun reins--chat-connection ()
  "The connection of the current chat, else of the current buffer's project."
  (if (eq major-mode 'reins-chat-mode) reins-chat--connection (reins-ensure-connection)))

(defun reins-sessions ()
  "Pick one of the project's sessions and continue it in the chat."
  (interactive)
  (let* ((connection (reins--chat-connection))
         (sessions (append (plist-get (reins-execute connection "reins.session.list" nil) :sessions) nil)))
    (unless sessions
      (user-error "reins: no sessions in %s yet; send a message in M-x reins-chat"
                  (abbreviate-file-name (reins-connection-root connection))))
    (let* ((choices (mapcar (lambda (s) (cons (reins-sessions--describe s) s)) sessions))
           (picked (cdr (assoc (completing-read "reins session: " choices nil t) choices))))
      (reins-sessions-resume connection (plist-get picked :id)))))

(defun reins-sessions-resume (connection session-id &optional prompt)
  "Open SESSION-ID of CONNECTION in the chat, with its conversation; PROMPT goes in the prompt."
  (let* ((opened (plist-get (reins-execute connection "reins.session.open" (list :sessionId session-id)) :sessionId))
         (history (reins-execute connection "reins.session.messages" (list :sessionId opened)))
         (buffer (reins-chat--buffer connection)))
    (with-current-buffer buffer
      (setq reins-chat--session opened
            reins-chat--running nil)
      (reins-chat--reset)
      (reins-sessions--replay (append (plist-get history :messages) nil))
      (let ((todos (append (plist-get history :todos) nil)))
        (when todos (reins-chat--todo todos)))
      (when prompt (reins-chat-set-prompt prompt)))
    (pop-to-buffer buffer)
    (goto-char (point-max))
    buffer))

(defun reins-sessions--replay (messages)
  "Write MESSAGES (of `reins.session.messages') into the chat as they were said."
  (dolist (message messages)
    (pcase (plist-get message :role)
      ("user" (reins-chat--user message))
      ("assistant"
       (when (stringp (plist-get message :model)) (setq reins-chat--model (plist-get message :model)))
       (dolist (block (append (plist-get message :content) nil))
         (pcase (plist-get block :type)
           ("text" (reins-chat--insert 'text (or (plist-get block :text) "")))
           ("toolCall"
            (unless (equal (plist-get block :name) "todo")
              (reins-chat--tool-start (plist-get block :id) (plist-get block :name) (plist-get block :arguments))))))
       (let ((error (plist-get message :error)))
         (when error
           (reins-chat--line 'notice (concat "✗ " (reins-chat--one-line (or (plist-get error :message) "the model call failed")))
                             'reins-chat-error))))
      ("toolResult"
       (reins-chat--tool-end (plist-get message :toolCallId) (eq (plist-get message :isError) t)
                             (reins-chat--content-text (plist-get message :content))))))
  (reins-chat--insert 'end ""))

;;; The tree

(defvar-local reins-tree--connection nil)
(defvar-local reins-tree--session nil)

(defvar reins-tree-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'reins-tree-checkout)
    (define-key map (kbd "f") #'reins-tree-fork)
    (define-key map (kbd "g") #'reins-tree-refresh)
    (define-key map (kbd "n") #'next-line)
    (define-key map (kbd "p") #'previous-line)
    map)
  "Keys of the session tree.")

(define-derived-mode reins-tree-mode special-mode "reins-tree"
  "The entries of a reins session as a tree.

\\{reins-tree-mode-map}"
  (setq-local truncate-lines t))

(defun reins-tree--label (node width)
  "NODE on a line of at most WIDTH characters: who said it and what."
  (let* ((who (or (plist-get node :role) (plist-get node :kind)))
         (label (plist-get node :label))
         (preview (reins-chat--one-line (plist-get node :preview)))
         (text (concat (pcase who ("user" "❯ ") ("assistant" "◀ ") ("toolResult" "↳ ")
                              (_ (concat "· " (replace-regexp-in-string "_" " " (or who "entry")) ": ")))
                       (if (string-empty-p preview) "(no text)" preview)
                       (if (and label (not (string-empty-p label))) (format " [%s]" label) ""))))
    (if (> (length text) width) (concat (substring text 0 (max 1 (1- width))) "…") text)))

(defun reins-tree--lines (tree width)
  "The lines of TREE (`reins.session.tree'), each (TEXT . NODE), in WIDTH columns: a chain of
entries at one indent, a branch point's children under `├─' and `└─'."
  (let* ((nodes (append (plist-get tree :nodes) nil))
         (children (make-hash-table :test #'equal))
         (leaf (plist-get tree :leaf))
         lines)
    (dolist (node (reverse nodes))
      (push node (gethash (plist-get node :parentId) children)))
    (cl-labels ((draw (node prefix connector)
                  ;; A chain goes on at the same indent until it branches.
                  (let ((rest-prefix (concat prefix (pcase connector ("├─ " "│  ") ("└─ " "   ") (_ "")))))
                    (while node
                      (let* ((mark (if (equal (plist-get node :id) leaf) "* " "  "))
                             (head (concat mark prefix connector)))
                        (push (cons (concat head (reins-tree--label node (- width (length head)))) node) lines))
                      (setq prefix rest-prefix connector "")
                      (let ((kids (gethash (plist-get node :id) children)))
                        (if (cdr kids)
                            (progn
                              (cl-loop for (kid . more) on kids
                                       do (draw kid prefix (if more "├─ " "└─ ")))
                              (setq node nil))
                          (setq node (car kids))))))))
      (let ((roots (gethash nil children)))
        (if (cdr roots)
            (cl-loop for (root . more) on roots do (draw root "" (if more "├─ " "└─ ")))
          (when roots (draw (car roots) "" "")))))
    (nreverse lines)))

(defun reins-tree--draw (tree)
  "Draw TREE into the current buffer, point on the leaf."
  (let* ((window (get-buffer-window (current-buffer)))
         (width (max 20 (1- (if window (window-width window) 80))))
         (inhibit-read-only t)
         (leaf-point nil))
    (erase-buffer)
    (insert (propertize (substitute-command-keys
                         "\\<reins-tree-mode-map>\\[reins-tree-checkout] check out (files too) · \\[reins-tree-fork] fork · \\[reins-tree-refresh] refresh · * where the session is\n")
                        'face 'shadow))
    (dolist (line (reins-tree--lines tree width))
      (when (equal (plist-get (cdr line) :id) (plist-get tree :leaf)) (setq leaf-point (point)))
      (insert (propertize (car line) 'reins-node (cdr line)
                          'face (and (equal (plist-get (cdr line) :id) (plist-get tree :leaf)) 'bold))
              "\n"))
    (when (null (plist-get tree :nodes)) (insert "(empty session)\n"))
    (goto-char (or leaf-point (point-min)))))

(defun reins-tree ()
  "Show the chat's session as a tree."
  (interactive)
  (let* ((connection (reins--chat-connection))
         (session (with-current-buffer (reins-chat--buffer connection) reins-chat--session)))
    (unless session (user-error "reins: no session yet; send a message or pick one with M-x reins-sessions"))
    (let ((buffer (get-buffer-create "*reins tree*")))
      (with-current-buffer buffer
        (reins-tree-mode)
        (setq reins-tree--connection connection reins-tree--session session))
      (pop-to-buffer buffer)
      (reins-tree-refresh)
      buffer)))

(defun reins-tree-refresh ()
  "Draw the tree again."
  (interactive)
  (reins-tree--draw (reins-execute reins-tree--connection "reins.session.tree" (list :sessionId reins-tree--session))))

(defun reins-tree--node ()
  (or (get-text-property (point) 'reins-node) (user-error "reins: no entry here")))

(defun reins-tree--report (result)
  "Say in one line what a check-out with files brought along."
  (let ((edits (length (plist-get result :edits)))
        (conflicts (length (plist-get result :conflicts)))
        (commands (length (plist-get result :commands))))
    (message "reins: %s"
             (string-join
              (delq nil (list (if (> edits 0) (format "%d file(s) proposed back, in *reins review*" edits)
                                (and (= conflicts 0) "no file needs to change"))
                              (and (> conflicts 0) (format "%d file(s) left as they are (your edits overlap)" conflicts))
                              (and (> commands 0) (format "%d command(s) whose effects were not tracked" commands))))
              " · "))))

(defun reins-tree-checkout ()
  "Continue the session from the entry at point, with the files as they were there."
  (interactive)
  (let* ((node (reins-tree--node))
         (connection reins-tree--connection)
         (session reins-tree--session)
         (result (reins-execute connection "reins.session.navigate"
                                (list :sessionId session :entryId (plist-get node :id) :files t))))
    (reins-tree--report result)
    (reins-tree-refresh)
    (let ((tree-window (selected-window)))
      (reins-sessions-resume connection session (plist-get result :prompt))
      (when (window-live-p tree-window) (select-window tree-window)))))

(defun reins-tree-fork ()
  "Start a new session holding the path to the entry at point, and continue it in the chat."
  (interactive)
  (let* ((node (reins-tree--node))
         (connection reins-tree--connection)
         (result (reins-execute connection "reins.session.fork"
                                (list :sessionId reins-tree--session :entryId (plist-get node :id))))
         (forked (plist-get result :sessionId)))
    (setq reins-tree--session forked)
    (reins-tree-refresh)
    (let ((tree-window (selected-window)))
      (reins-sessions-resume connection forked (plist-get result :prompt))
      (when (window-live-p tree-window) (select-window tree-window)))
    (message "reins: forked into session %s" (substring forked 0 (min 8 (length forked))))))

(defun reins-tree--on-event (connection params)
  "Draw the tree again when a run of its session ends, if it is shown."
  (when (equal (plist-get (plist-get params :event) :type) "agent_end")
    (let ((buffer (get-buffer "*reins tree*")))
      (when (and buffer (get-buffer-window buffer t))
        (with-current-buffer buffer
          (when (and (eq reins-tree--connection connection)
                     (equal reins-tree--session (plist-get params :sessionId)))
            ;; After the answer to this notification is written: a request from inside a
            ;; notification handler would wait inside jsonrpc's filter.
            (run-at-time 0 nil (lambda ()
                                 (when (buffer-live-p buffer)
                                   (with-current-buffer buffer
                                     (ignore-errors (reins-tree-refresh))))))))))))

(add-hook 'reins-event-functions #'reins-tree--on-event)

(provide 'reins-sessions)
;;; reins-sessions.el ends here
