;;; reins-review.el --- review of reins's proposals: any subset of an edit's hunks  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  Every proposal that waits for you (an edit, a command, an MCP
;; call) shows in `*reins review*', shown when one arrives.  An edit shows each hunk as the lines
;; it removes and adds, all marked to be accepted; SPC toggles the hunk at point, C-c C-c applies
;; the edit with the hunks marked (all: accepted; some: the others rejected, with the reason you
;; give; none: rejected), C-c C-k rejects it.  reins then sends the change to the buffer
;; (workspace/applyEdit), so undo takes it back.

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)

(declare-function reins-execute-async "reins")
(declare-function reins--point "reins")
(declare-function reins--uri-to-path "reins")
(declare-function reins-connection-root "reins")
(defvar reins-event-functions)

(defconst reins-review-buffer "*reins review*")

(defvar reins-review--pending nil
  "The proposals waiting, oldest first: each (CONNECTION EDIT CHOSEN), CHOSEN a vector of
booleans, one per hunk: whether it is to be accepted.")

(defvar reins-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "SPC") #'reins-review-toggle)
    (define-key map (kbd "C-c C-c") #'reins-review-apply)
    (define-key map (kbd "C-c C-k") #'reins-review-reject)
    (define-key map (kbd "n") #'reins-review-next)
    (define-key map (kbd "p") #'reins-review-previous)
    (define-key map (kbd "RET") #'reins-review-visit)
    map)
  "Keys of `*reins review*'.")

(define-derived-mode reins-review-mode special-mode "reins-review"
  "The proposals of reins that wait for you.

\\{reins-review-mode-map}"
  (setq-local truncate-lines t))

;;; Showing

(defun reins--hunks-text (hunks count)
  "\"hunk 1\" or \"hunks 1, 3\" for the 0-based HUNKS, of COUNT."
  (let ((shown (mapconcat (lambda (i) (number-to-string (1+ i))) hunks ", ")))
    (format "%s %s of %d" (if (cdr hunks) "hunks" "hunk") shown count)))


(defun reins-review--file-text-buffer (uri)
  "A buffer holding URI's text: the one visiting it, else a temporary copy of the file."
  (let ((path (reins--uri-to-path uri)))
    (or (and path (find-buffer-visiting path))
        (let ((buffer (generate-new-buffer " *reins review file*")))
          (with-current-buffer buffer
            (when (and path (file-readable-p path)) (insert-file-contents path)))
          buffer))))

(defun reins-review--context (hunk)
  "The line above HUNK's in the current buffer, when it has text: where the change is."
  (save-excursion
    (goto-char (reins--point (plist-get (plist-get hunk :range) :start)))
    (when (zerop (forward-line -1))
      (let ((line (buffer-substring-no-properties (point) (line-end-position))))
        (unless (string-blank-p line) line)))))

(defun reins-review--hunk-lines (hunk)
  "The whole lines HUNK changes in the current buffer, and what they become: (OLD . NEW),
lists of lines."
  (let* ((range (plist-get hunk :range))
         (start (reins--point (plist-get range :start)))
         (end (max start (reins--point (plist-get range :end))))
         (bol (save-excursion (goto-char start) (line-beginning-position)))
         (eol (save-excursion (goto-char end)
                              (if (and (bolp) (> end start)) end (line-end-position))))
         (old (buffer-substring-no-properties bol eol))
         (new (concat (substring old 0 (- start bol)) (or (plist-get hunk :newText) "")
                      (substring old (- end bol)))))
    (cons (if (string-empty-p old) nil (split-string (string-remove-suffix "\n" old) "\n"))
          (if (string-empty-p new) nil (split-string (string-remove-suffix "\n" new) "\n")))))

(defun reins-review--help ()
  (substitute-command-keys
   "\\<reins-review-mode-map>\\[reins-review-toggle] toggle hunk · \\[reins-review-apply] apply marked · \\[reins-review-reject] reject · \\[reins-review-next]/\\[reins-review-previous] move · \\[reins-review-visit] visit\n"))

(defun reins-review--title (connection edit)
  "The line that heads EDIT of CONNECTION."
  (let ((root (reins-connection-root connection)))
    (cond ((plist-get edit :command)
           (format "%s · run `%s` in %s" (plist-get edit :id) (plist-get edit :command)
                   (abbreviate-file-name (or (plist-get edit :cwd) root))))
          ((plist-get edit :call)
           (let ((call (plist-get edit :call)))
             (format "%s · call %s/%s" (plist-get edit :id) (plist-get call :server) (plist-get call :tool))))
          (t (let* ((path (reins--uri-to-path (plist-get edit :uri)))
                    (hunks (length (plist-get edit :hunks))))
               (format "%s · %s%s %s · %d hunk%s" (plist-get edit :id)
                       (plist-get edit :tool)
                       (cond ((eq (plist-get edit :create) t) " (new file)")
                             ((eq (plist-get edit :delete) t) " (deletes the file)")
                             (t ""))
                       (if path (file-relative-name path root) (plist-get edit :uri))
                       hunks (if (= hunks 1) "" "s")))))))

(defun reins-review--insert-edit (entry)
  "Insert the proposal ENTRY, (CONNECTION EDIT CHOSEN)."
  (pcase-let* ((`(,connection ,edit ,chosen) entry)
               (hunks (append (plist-get edit :hunks) nil))
               (start (point)))
    ;; Where n and p stop: each hunk, or the proposal itself when it has none.
    (insert (propertize (reins-review--title connection edit) 'face 'bold 'reins-stop (null hunks)) "\n")
    (when hunks
      (let ((text (reins-review--file-text-buffer (plist-get edit :uri))))
        (unwind-protect
            (cl-loop for hunk in hunks
                     for i from 0
                     do (let ((lines (with-current-buffer text (reins-review--hunk-lines hunk)))
                              (context (with-current-buffer text (reins-review--context hunk)))
                              (hunk-start (point)))
                          (insert (propertize "  " 'reins-stop t))
                          (insert (format "%s hunk %d of %d · line %d\n"
                                          (if (aref chosen i) "[x] accept" "[ ] reject")
                                          (1+ i) (length hunks)
                                          (1+ (plist-get (plist-get (plist-get hunk :range) :start) :line))))
                          (when context (insert (propertize (concat "   " context) 'face 'diff-context) "\n"))
                          (dolist (line (car lines)) (insert (propertize (concat "  -" line) 'face 'diff-removed) "\n"))
                          (dolist (line (cdr lines)) (insert (propertize (concat "  +" line) 'face 'diff-added) "\n"))
                          (put-text-property hunk-start (point) 'reins-hunk i)))
          (unless (buffer-file-name text) (when (string-prefix-p " " (buffer-name text)) (kill-buffer text))))))
    (dolist (note (append (plist-get edit :notes) nil))
      (insert (propertize (concat "  note: " note) 'face 'shadow) "\n"))
    (put-text-property start (point) 'reins-edit entry)
    (insert "\n")))

(defun reins-review--render ()
  "Draw `*reins review*' again, point kept on the same hunk."
  (let ((buffer (get-buffer-create reins-review-buffer)))
    (with-current-buffer buffer
      (unless (eq major-mode 'reins-review-mode) (reins-review-mode))
      (let ((id (get-text-property (point) 'reins-edit))
            (hunk (get-text-property (point) 'reins-hunk))
            (inhibit-read-only t))
        (erase-buffer)
        (insert (propertize (reins-review--help) 'face 'shadow) "\n")
        (if (null reins-review--pending)
            (insert "Nothing waits for your review.\n")
          (mapc #'reins-review--insert-edit reins-review--pending))
        (goto-char (point-min))
        (let ((found (and id (text-property-any (point-min) (point-max) 'reins-edit id))))
          (cond ((not found) (reins-review-next))
                (t (goto-char found)
                   (if (not hunk)
                       (reins-review-next)
                     (while (and (< (point) (point-max))
                                 (equal (get-text-property (point) 'reins-edit) id)
                                 (not (equal (get-text-property (point) 'reins-hunk) hunk)))
                       (forward-line 1))))))))
    buffer))

;;; Keys

(defun reins-review--entry ()
  "The proposal at point, (CONNECTION EDIT CHOSEN), or a `user-error'."
  (let ((entry (get-text-property (point) 'reins-edit)))
    (or (car (memq entry reins-review--pending))
        (user-error "reins: no proposal here"))))

(defun reins-review-toggle ()
  "Toggle the hunk at point between accept and reject."
  (interactive)
  (let ((entry (reins-review--entry))
        (hunk (get-text-property (point) 'reins-hunk)))
    (unless hunk (user-error "reins: no hunk here (move to one)"))
    (aset (nth 2 entry) hunk (not (aref (nth 2 entry) hunk)))
    (reins-review--render)))

(defun reins-review--decide (entry command argument)
  "Send the decision COMMAND with ARGUMENT for ENTRY; it leaves the list once reins says so."
  (reins-execute-async (nth 0 entry) command argument
                       (lambda (_result) nil)
                       (lambda (why) (message "reins: %s" why))))

(defun reins-review--reason (prompt)
  "A reason for the agent, read with PROMPT; nil when none is given."
  (let ((reason (string-trim (read-string prompt))))
    (unless (string-empty-p reason) reason)))

(defun reins-review-apply ()
  "Apply the proposal at point as marked: all its hunks, some (the others rejected, with a
reason you may give), or none (rejected).  A command or call runs."
  (interactive)
  (let* ((entry (reins-review--entry))
         (edit (nth 1 entry))
         (id (plist-get edit :id))
         (chosen (append (nth 2 entry) nil))
         (indexes (cl-loop for yes in chosen for i from 0 when yes collect i)))
    (cond ((or (null chosen) (= (length indexes) (length chosen)))
           (reins-review--decide entry "reins.edit.accept" (list :id id)))
          ((null indexes)
           (reins-review--decide entry "reins.edit.reject"
                                 (append (list :id id)
                                         (let ((reason (reins-review--reason "Reject every hunk — why, for the agent (optional): ")))
                                           (when reason (list :reason reason))))))
          (t (reins-review--decide entry "reins.edit.accept"
                                   (append (list :id id :hunks (vconcat indexes))
                                           (let ((reason (reins-review--reason
                                                          (format "Reject %s — why, for the agent (optional): "
                                                                  (reins--hunks-text (cl-loop for yes in chosen for i from 0 unless yes collect i)
                                                                                     (length chosen))))))
                                             (when reason (list :reason reason)))))))))

(defun reins-review-reject ()
  "Reject the proposal at point, with a reason for the agent if you give one."
  (interactive)
  (let* ((entry (reins-review--entry))
         (reason (reins-review--reason "Reject — why, for the agent (optional): ")))
    (reins-review--decide entry "reins.edit.reject"
                          (append (list :id (plist-get (nth 1 entry) :id)) (when reason (list :reason reason))))))

(defun reins-review-next ()
  "Move to the next hunk (or proposal without hunks)."
  (interactive)
  (let ((next (save-excursion
                (end-of-line)
                (text-property-any (point) (point-max) 'reins-stop t))))
    (when next (goto-char next))))

(defun reins-review-previous ()
  "Move to the previous hunk (or proposal without hunks)."
  (interactive)
  (let ((previous (save-excursion
                    (beginning-of-line)
                    (let (found)
                      (while (and (not found) (not (bobp)))
                        (forward-line -1)
                        (when (get-text-property (point) 'reins-stop) (setq found (point))))
                      found))))
    (when previous (goto-char previous))))

(defun reins-review-visit ()
  "Show the hunk at point in its file."
  (interactive)
  (let* ((edit (nth 1 (reins-review--entry)))
         (hunk (get-text-property (point) 'reins-hunk))
         (path (reins--uri-to-path (plist-get edit :uri))))
    (unless path (user-error "reins: this proposal changes no file"))
    (pop-to-buffer (find-file-noselect path))
    (when hunk
      (goto-char (reins--point (plist-get (plist-get (aref (plist-get edit :hunks) hunk) :range) :start))))))

;;; Events

(defun reins-review--on-event (connection params)
  "Keep `*reins review*' in step with the proposals of CONNECTION."
  (let* ((event (plist-get params :event))
         (type (plist-get event :type)))
    (pcase type
      ("edit_proposed"
       (let ((edit (plist-get event :edit)))
         (setq reins-review--pending
               (append reins-review--pending
                       (list (list connection edit (make-vector (length (plist-get edit :hunks)) t)))))
         (display-buffer (reins-review--render) '(nil (inhibit-same-window . t)))))
      ("edit_resolved"
       (let ((entry (cl-find-if (lambda (e) (and (eq (car e) connection)
                                                 (equal (plist-get (nth 1 e) :id) (plist-get event :id))))
                                reins-review--pending)))
         (when entry
           (setq reins-review--pending (delq entry reins-review--pending))
           (reins-review--render)
           ;; Nothing left to decide: the window goes back to what it showed (the file, often).
           (unless reins-review--pending
             (dolist (window (get-buffer-window-list reins-review-buffer nil t))
               (quit-restore-window window 'bury))))))
      ("connection_closed"
       (setq reins-review--pending (cl-remove connection reins-review--pending :key #'car))
       (when (get-buffer reins-review-buffer) (reins-review--render))))))

(add-hook 'reins-event-functions #'reins-review--on-event)

(defun reins-review ()
  "Show the proposals waiting for your review."
  (interactive)
  (pop-to-buffer (reins-review--render)))

(provide 'reins-review)
;;; reins-review.el ends here
