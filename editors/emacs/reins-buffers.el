;;; reins-buffers.el --- what reins sees of the buffers, and how its edits land in them  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  Positions in LSP's terms (UTF-16 columns), the project's file
;; buffers sent to reins as they change (didOpen, incremental didChange, didSave), and reins's
;; `workspace/applyEdit' applied to them, refused when made for text the buffer no longer has.

(require 'cl-lib)
(require 'jsonrpc)
(require 'subr-x)
(require 'url-util)

(defvar reins--connection)
(defvar reins-sync-predicate)
(declare-function reins--live-connection "reins-connection")
(declare-function reins--root "reins-connection")
(declare-function reins--any-connection-p "reins-connection")

;;; Positions and URIs

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
  ;; Cheap when no reins runs: no project lookup for every file visited.
  (when (and buffer-file-name (not reins--connection) (reins--any-connection-p)
             (funcall reins-sync-predicate))
    (let ((connection (reins--live-connection (reins--root))))
      (when connection (reins--open connection)))))

(add-hook 'find-file-hook #'reins--attach-buffer)
(add-hook 'after-change-major-mode-hook #'reins--attach-buffer)

;;; reins's edits

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


(provide 'reins-buffers)
;;; reins-buffers.el ends here
