;;; eglot-chat.el --- reins.el as a user has it: answers in *reins*, at once  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-chat.el
;;
;; Loads editors/emacs/reins.el the way its header says, with `reins' on PATH and the model named
;; only by the environment (OPENAI_BASE_URL, REINS_MODEL).  The scripted model answers at once,
;; so the answer reaches Emacs in the same read as the answer to the code action's request: it
;; must still show in *reins* without waiting for more output from the server.  Then "Ask agent
;; about selection" asks for its question and follows up in the same session, and a failed run
;; says why in *reins*.
;; `reins-test-load-reins' makes "the same read" certain rather than likely.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-answer "This function adds two numbers and returns the sum.")
(defconst reins-test-second "It returns a + b.")
(defvar reins-test-first-session nil "The session of the first run.")

(let* ((dir (reins-test-setup
             (vector `((text . ,reins-test-answer))
                     `((text . ,reins-test-second))
                     '((error . ((status . 401) (body . "{\"error\": {\"message\": \"bad key\"}}")))))
             '(("add.py" . "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"))))
       (file (expand-file-name "add.py" dir)))
  (reins-test-load-reins)
  (let ((server (reins-test-connect file)))
    (message "connected to %s" (plist-get (eglot--server-info server) :name))

    ;; An instant answer: the whole run may arrive with the code action's answer.
    (goto-char (point-min))
    (let ((titles (reins-test-pick "Agent: explain this" (point-min) (progn (forward-line 2) (point)))))
      (dolist (wanted '("Ask agent about selection" "Agent: explain this" "Agent: review this"
                        "Agent: write tests for this"))
        (unless (member wanted titles)
          (reins-test-fail "code action %S missing from %S" wanted titles))))
    (reins-test-wait "the answer in *reins*"
                     (lambda () (reins-test-shows (regexp-quote reins-test-answer))))
    (unless (get-buffer-window "*reins*" t)
      (reins-test-fail "*reins* was not shown when the run started"))
    (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
    (setq reins-test-first-session (plist-get (reins-test-event "agent_end") :sessionId))
    (let* ((end (plist-get (reins-test-event "agent_end") :event))
           (answer (cl-find-if (lambda (m) (equal (plist-get m :role) "assistant"))
                               (append (plist-get end :messages) nil))))
      (unless (equal (plist-get answer :model) "scripted-model")
        (reins-test-fail "the model was %S, not REINS_MODEL's" (plist-get answer :model))))

    ;; "Ask agent about selection" asks for the question.
    (setq reins-test-events nil)
    (let (asked)
      (cl-letf (((symbol-function 'read-string)
                 (lambda (prompt &rest _) (setq asked prompt) "What does it return?")))
        (goto-char (point-min))
        (reins-test-pick "Ask agent about selection" (point-min) (progn (forward-line 2) (point))))
      (unless (equal asked "Ask reins about the selection: ")
        (reins-test-fail "the question was not asked for (%S)" asked)))
    (reins-test-wait "the second answer in *reins*"
                     (lambda () (reins-test-shows (regexp-quote reins-test-second))))
    (reins-test-wait "the second run to end" (lambda () (reins-test-event "agent_end")))
    (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) reins-test-first-session)
      (reins-test-fail "the ask started a new session instead of following up on the last one"))
    (let* ((prompt (cl-loop for params in reins-test-events
                            for event = (plist-get params :event)
                            when (and (equal (plist-get event :type) "message_start")
                                      (equal (plist-get (plist-get event :message) :role) "user"))
                            return (plist-get event :message)))
           (text (mapconcat (lambda (c) (or (plist-get c :text) "")) (plist-get prompt :content) "")))
      (unless (string-prefix-p "What does it return?" text)
        (reins-test-fail "the prompt was %S" text)))

    ;; A failed run says why, and what to do, in *reins*.
    (setq reins-test-events nil)
    (goto-char (point-min))
    (reins-test-pick "Agent: review this" (point-min) (progn (forward-line 2) (point)))
    (reins-test-wait "the failure in *reins*"
                     (lambda () (reins-test-shows "✗ .*Check the API key")))
    (message "*reins*:\n%s" (with-current-buffer "*reins*" (buffer-string)))
    (eglot-shutdown server))
  (reins-test-pass "*reins* showed an instant answer at once, asked for the question, and said why a run failed"))
