;;; reins-ask.el --- asking reins about a region, in the chat's session  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  `reins-ask' and `reins-code-actions': the region, its diagnostics
;; and your question go to reins as a follow-up in the chat's session.

(require 'cl-lib)
(require 'subr-x)

(defvar reins--connection)
(declare-function reins-ensure-connection "reins-connection")
(declare-function reins-request "reins-connection")
(declare-function reins-execute-async "reins-connection")
(declare-function reins--root "reins-connection")
(declare-function reins--open "reins-buffers")
(declare-function reins--close "reins-buffers")
(declare-function reins--position "reins-buffers")
(declare-function reins--buffer-uri "reins-buffers")
(declare-function reins--flymake-diagnostics "reins-diagnostics")

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


(provide 'reins-ask)
;;; reins-ask.el ends here
