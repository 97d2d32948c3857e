;;; beside-typing.el --- an agent edit arrives while the user types, with reins.el  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/beside-typing.el
;;
;; With `approval.edit = "auto"', the model edits a line while the user types at the top of the
;; file, 20 insertions a second, each sent to reins as it is made, one of them just as the edit
;; arrives.  An edit made for an older
;; version than the buffer's is refused by reins.el (`workspace/applyEdit' answers applied:
;; false with the versions) and re-based by reins onto the typed text.  Nothing typed is lost,
;; the agent's line is where it belongs, and the model is told "Edited".

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-text "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")

(let* ((dir (reins-test-setup
             (vector
              `((delayMs . 300)
                (toolCalls . ,(vector `((id . "call_1") (name . "edit")
                                        (arguments . ((path . "add.py")
                                                      (edits . ,(vector '((oldText . "    return a - b")
                                                                          (newText . "    return -(b - a)"))))))))))
              '((text . "Done.")))
             `(("add.py" . ,reins-test-text))))
       (file (expand-file-name "add.py" dir))
       (typed nil)
       (refused nil)
       (typist nil))
  (reins-test-load-reins-el)
  (setq reins-initialization-options '(:approval (:edit "auto")))
  ;; One keystroke lands just as the first edit arrives, before reins heard of it: that edit
  ;; is made for the text before it, whatever the timing of the typist.
  (advice-add 'reins--apply-workspace-edit :before
              (lambda (&rest _)
                (unless (member "#t-as-it-arrived\n" typed)
                  (with-current-buffer (find-buffer-visiting file)
                    (save-excursion (goto-char (point-min)) (insert "#t-as-it-arrived\n")))
                  (push "#t-as-it-arrived\n" typed))))
  (advice-add 'reins--apply-workspace-edit :filter-return
              (lambda (answer) (unless (eq (plist-get answer :applied) t) (push answer refused)) answer))
  (find-file file)
  (python-mode)
  (let ((buffer (current-buffer)))
    (reins-chat)
    (reins-test-type-and-send "Negate sub.")
    ;; The typist: a token at the top, 20 a second, while the run goes on.
    (setq typist (run-at-time 0 0.05 (lambda ()
                                       (with-current-buffer buffer
                                         (let ((token (format "#t%d\n" (length typed))))
                                           (save-excursion (goto-char (point-min)) (insert token))
                                           (push token typed))))))
    (reins-test-wait "the edit to land" (lambda () (with-current-buffer buffer
                                                     (string-match-p "-(b - a)" (buffer-string)))))
    (cancel-timer typist)
    (reins-test-wait "the run to end (agent_end)" (lambda () (reins-test-event "agent_end")))
    (with-current-buffer buffer
      (dolist (token typed)
        (unless (string-match-p (regexp-quote token) (buffer-string))
          (reins-test-fail "the typed %S is gone: %S" token (buffer-string))))
      (unless (string-suffix-p (replace-regexp-in-string "a - b" "-(b - a)" reins-test-text) (buffer-string))
        (reins-test-fail "the agent's line is not where it belongs: %S" (buffer-string))))
    (let ((results (reins-test-tool-results)))
      (unless (string-prefix-p "Edited" (car results))
        (reins-test-fail "the model read %S" (car results))))
    (unless refused (reins-test-fail "no edit was refused as made for older text"))
    (message "typed %d tokens; %d edit(s) refused as made for older text: %S" (length typed) (length refused) refused)
    (reins-test-pass "an edit made while the user typed landed on the typed text, nothing typed lost")))
