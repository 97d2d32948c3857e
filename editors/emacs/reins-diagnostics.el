;;; reins-diagnostics.el --- what the editor knows is wrong, for the agent (`reins/diagnostics')  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  Flymake's diagnostics, whichever backend filled them (eglot's,
;; lsp-mode's, a checker), and Flycheck's, as LSP Diagnostics: the answer to reins's
;; `reins/diagnostics', and what an ask about a region carries.

(require 'cl-lib)
(require 'flymake)

(defvar reins--connection)
(declare-function reins--position "reins-buffers")
(declare-function reins--point "reins-buffers")
(declare-function reins--uri-to-path "reins-buffers")
(declare-function reins--buffer-uri "reins-buffers")

(defun reins--own-diagnostic-p (diag)
  "Whether the Flymake DIAG is reins's own (a pending edit's, through eglot): not wanted back."
  (let ((data (flymake-diagnostic-data diag)))
    (equal (plist-get (cdr (and (listp data) (assoc 'eglot-lsp-diag data))) :source) "reins")))

(defun reins--lsp-diagnostic (diag &optional position)
  "The Flymake DIAG as an LSP Diagnostic.
POSITION turns a buffer position into an LSP one; `reins--position' unless the caller's
connection counts columns its own way (eglot's)."
  (let* ((data (flymake-diagnostic-data diag))
         (lsp (cdr (and (listp data) (assoc 'eglot-lsp-diag data))))
         (severity (flymake--severity (flymake-diagnostic-type diag)))
         (backend (flymake-diagnostic-backend diag))
         (source (or (plist-get lsp :source) (and backend (symbolp backend) (symbol-name backend))))
         (code (plist-get lsp :code)))
    (append (list :range (let ((position (or position #'reins--position)))
                           (list :start (funcall position (flymake-diagnostic-beg diag))
                                 :end (funcall position (flymake-diagnostic-end diag))))
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


(provide 'reins-diagnostics)
;;; reins-diagnostics.el ends here
