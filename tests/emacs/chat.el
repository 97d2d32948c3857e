;;; chat.el --- the chat buffer of reins.el: streaming, follow-ups, cancel, asks  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/chat.el
;;
;; M-x reins-chat, a message typed below the line and C-c C-c: the answer streams in, with the
;; model's todo list and its tool call (title and status).  The next message continues the same
;; session; C-c C-k cancels a turn that would never end; a failed model call says in one line
;; what to do; and an ask about a region of the file (`reins-ask', or reins's code actions)
;; lands in the chat's session as a follow-up rather than in a new one.  When reins stops, the
;; next message starts it again and continues the session; the header names the model.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-answer "I read calc.py; it sums a list.")

(let* ((dir (reins-test-setup
             (vector
              `((toolCalls . ,(vector `((id . "call_1") (name . "todo")
                                        (arguments . ((todos . ,(vector '((content . "Read calc.py") (status . "completed"))
                                                                        '((content . "Explain it") (status . "in_progress")))))))
                                      '((id . "call_2") (name . "read") (arguments . ((path . "calc.py")))))))
              `((thinking . "The user wants a plan.") (text . ,reins-test-answer) (chunkChars . 4) (chunkDelayMs . 10))
              '((text . "The second step is done."))
              '((fault . ((kind . "endless") (everyMs . 50))))
              '((error . ((status . 401) (body . "{\"error\": {\"message\": \"bad key\"}}"))))
              '((text . "That line returns the sum."))
              '((text . "No tests yet."))
              '((text . "Yes, still here.")))
             '(("calc.py" . "def total(xs):\n    return sum(xs)\n"))))
       (file (expand-file-name "calc.py" dir)))
  (reins-test-load-reins-el)
  (find-file file)
  (python-mode)
  (call-interactively #'reins-chat)
  (unless (eq major-mode 'reins-chat-mode) (reins-test-fail "M-x reins-chat did not show the chat"))
  (let ((chat (current-buffer)))
    ;; Streaming, with the todo list and the tool call.
    (reins-test-type-and-send "Plan and explain calc.py")
    (reins-test-wait "the answer in the chat" (lambda () (reins-test-chat-shows (regexp-quote reins-test-answer))))
    (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
    (dolist (shown '("❯ Plan and explain calc.py" "☰ todo 1/2\n  ✓ Read calc.py\n  ▶ Explain it"
                     "  ✓ read calc.py\n… thinking\n" "I read calc.py"))
      (unless (reins-test-chat-shows (regexp-quote shown))
        (reins-test-fail "the chat does not show %S:\n%s" shown (with-current-buffer chat (buffer-string)))))
    (when (reins-test-chat-shows "The user wants a plan")
      (reins-test-fail "the model's reasoning was shown as its answer"))
    (with-current-buffer chat
      (unless (zerop (+ (hash-table-count reins-chat--tools) (hash-table-count reins-chat--reviewed)))
        (reins-test-fail "the chat still keeps the ended run's tool calls")))
    (with-current-buffer chat
      (unless (string-empty-p (buffer-substring-no-properties reins-chat--prompt (point-max)))
        (reins-test-fail "the prompt was not emptied after sending"))
      ;; The transcript is read-only; the prompt is not.
      (goto-char (point-min))
      (when (condition-case nil (progn (insert "x") t) (text-read-only nil))
        (reins-test-fail "the transcript could be typed into")))
    (let ((first-session (plist-get (reins-test-event "agent_end") :sessionId)))
      ;; A follow-up continues the session.
      (setq reins-test-events nil)
      (with-current-buffer chat (reins-test-type-and-send "And the second step?"))
      (reins-test-wait "the second answer" (lambda () (reins-test-chat-shows "The second step is done\\.")))
      (reins-test-wait "the second run to end" (lambda () (reins-test-event "agent_end")))
      (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) first-session)
        (reins-test-fail "the follow-up started another session"))
      ;; C-c C-k cancels a turn that would not end.
      (setq reins-test-events nil)
      (with-current-buffer chat (reins-test-type-and-send "Count forever"))
      (reins-test-wait "the endless answer to stream" (lambda () (reins-test-event "message_update")))
      (with-current-buffer chat (call-interactively (key-binding (kbd "C-c C-k"))))
      (reins-test-wait "the run to be cancelled" (lambda () (reins-test-chat-shows "■ cancelled")))
      ;; A failed model call: one line saying what to do.
      (setq reins-test-events nil)
      (with-current-buffer chat (reins-test-type-and-send "Try again"))
      (reins-test-wait "the failure in the chat" (lambda () (reins-test-chat-shows "^✗ .*API key.*\n")))
      ;; An ask about a region goes to the chat's session.
      (setq reins-test-events nil)
      (with-current-buffer (find-buffer-visiting file)
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "What does line 2 return?")))
          (goto-char (point-min))
          (forward-line 1)
          (set-mark (point))
          (end-of-line)
          (activate-mark)
          (call-interactively #'reins-ask)))
      (reins-test-wait "the ask's answer in the chat" (lambda () (reins-test-chat-shows "That line returns the sum\\.")))
      (reins-test-wait "the ask's run to end" (lambda () (reins-test-event "agent_end")))
      (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) first-session)
        (reins-test-fail "the ask started another session"))
      (unless (reins-test-chat-shows "❯ What does line 2 return\\?")
        (reins-test-fail "the ask's question is not in the chat"))
      ;; reins's code actions on the region: "Ask agent about selection" asks for the question
      ;; and goes to the chat's session too.
      (setq reins-test-events nil)
      (let (offered)
        (with-current-buffer (find-buffer-visiting file)
          (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "Is it tested?"))
                    ((symbol-function 'completing-read)
                     (lambda (_prompt choices &rest _) (setq offered choices) "Ask agent about selection")))
            (goto-char (point-min))
            (set-mark (point))
            (forward-line 2)
            (activate-mark)
            (call-interactively #'reins-code-actions)))
        (dolist (title '("Ask agent about selection" "Agent: explain this" "Agent: review this"))
          (unless (member title offered)
            (reins-test-fail "the code actions offered %S, not %S" offered title))))
      (reins-test-wait "the code action's answer" (lambda () (reins-test-chat-shows "No tests yet\\.")))
      (reins-test-wait "its run to end" (lambda () (reins-test-event "agent_end")))
      (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) first-session)
        (reins-test-fail "the code action started another session"))
      (unless (reins-test-chat-shows "❯ Is it tested\\?")
        (reins-test-fail "the code action's question is not in the chat"))
      ;; reins stops; the next message starts it again and goes on in the same session.
      (with-current-buffer (find-buffer-visiting file) (reins-shutdown))
      (reins-test-wait "the chat to say reins stopped" (lambda () (reins-test-chat-shows "■ reins stopped")))
      (setq reins-test-events nil)
      (with-current-buffer chat (reins-test-type-and-send "Still there?"))
      (reins-test-wait "the answer from the new reins" (lambda () (reins-test-chat-shows "Yes, still here\\.")))
      (reins-test-wait "its run to end" (lambda () (reins-test-event "agent_end")))
      (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) first-session)
        (reins-test-fail "after the restart the chat left its session"))
      (unless (string-match-p "scripted-model" (with-current-buffer chat (reins-chat--header)))
        (reins-test-fail "the header does not name the model: %S" (with-current-buffer chat (reins-chat--header))))
      ;; A model's name is data (a session file's): a % in it shows as itself, which the header
      ;; line, a mode-line construct, says as %% (`format-mode-line' draws nothing in batch).
      (with-current-buffer chat
        (let ((reins-chat--model "lab/50%-off%b"))
          (unless (string-match-p (regexp-quote "lab/50%%-off%%b") (reins-chat--header))
            (reins-test-fail "the header would misread a %% in the model: %S" (reins-chat--header))))))
    (message "chat:\n%s" (with-current-buffer chat (buffer-string))))
  (reins-test-pass "the chat streamed, followed up in one session, cancelled, said what failed, and took an ask"))
