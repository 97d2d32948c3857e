;;; reins.el --- use reins from Emacs through eglot  -*- lexical-binding: t; -*-

;; Load this file (or copy the form into your init).  Eglot runs one server per buffer, so this
;; example gives reins the modes listed; for a language whose own server you also need, use reins
;; in a second Emacs or switch with `M-x eglot' per project.
;;
;; What works through plain LSP (tested in CI: tests/emacs/):
;; - `M-x eglot-code-actions' on a region: "Ask agent about selection" (asks for the question),
;;   "Agent: explain this", "Agent: review this", "Agent: fix the diagnostics here",
;;   "Agent: write tests for this";
;; - the run's progress in the mode line ($/progress) and failures in the echo area;
;; - proposed edits as diagnostics (Flymake) with the code actions "Accept agent edit",
;;   "Accept this hunk" and "Reject agent edit"; accepting applies them through
;;   workspace/applyEdit, so undo works.

(require 'eglot)

(add-to-list 'eglot-server-programs
             `((python-mode python-ts-mode js-mode typescript-ts-mode)
               . ("reins" "lsp"
                  :initializationOptions
                  (:model "anthropic/claude-sonnet-4-5"
                   :approval (:edit "ask" :write "ask" :bash "ask")))))

;; Show each run's streamed answer in a buffer as it arrives.
(defvar reins-answer-buffer "*reins*"
  "Where the streamed answers of reins runs are appended.")

(cl-defmethod eglot-handle-notification (_server (_method (eql reins/event)) &rest params)
  (let* ((event (plist-get params :event))
         (type (plist-get event :type)))
    (with-current-buffer (get-buffer-create reins-answer-buffer)
      (let ((inhibit-read-only t))
        (goto-char (point-max))
        (pcase type
          ("agent_start" (insert "\n── reins ──\n"))
          ("message_update"
           (let ((delta (plist-get event :delta)))
             (when (equal (plist-get delta :kind) "text")
               (insert (plist-get delta :delta)))))
          ("tool_execution_start"
           (insert (format "\n[%s]\n" (plist-get event :toolName))))
          ("agent_end" (insert "\n")))))))

(provide 'reins)
;;; reins.el ends here
