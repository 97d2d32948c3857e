;;; beside-listen.el --- reins.el's own connection to a running `reins lsp --listen'  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/beside-listen.el
;;
;; `reins lsp --listen 127.0.0.1:0' runs as it would at the far end of an SSH tunnel; reins.el,
;; given its port in `reins-connect' and the token file it printed in `reins-listen-token-file',
;; connects with the token, and the chat's answer shows.  M-x reins-shutdown ends it cleanly.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(let* ((dir (reins-test-setup (vector '((text . "It adds a and b, over the tunnel.")))
                              '(("add.py" . "def add(a, b):\n    return a + b\n"))))
       (file (expand-file-name "add.py" dir))
       (said (generate-new-buffer " *reins listen stderr*"))
       (listener (make-process :name "reins-listen" :buffer nil :stderr said
                               :command (list (reins-test-bin "REINS_BIN") "lsp" "--listen" "127.0.0.1:0"))))
  (reins-test-wait "reins to say where it listens"
                   (lambda () (with-current-buffer said (string-match-p "listening on " (buffer-string)))))
  (let* ((text (with-current-buffer said (buffer-string)))
         (port (and (string-match "listening on 127\\.0\\.0\\.1:\\([0-9]+\\)" text)
                    (string-to-number (match-string 1 text))))
         (token-file (and (string-match "the token is in \\(.*\\) (send it" text) (match-string 1 text))))
    (unless (and port token-file) (reins-test-fail "no port or token file in %S" text))
    (reins-test-load-reins-el)
    (setq reins-connect (list "127.0.0.1" port)
          reins-listen-token-file token-file))
  (find-file file)
  (python-mode)
  (reins-chat)
  (reins-test-type-and-send "What does add do?")
  (reins-test-wait "the answer in the chat" (lambda () (reins-test-chat-shows "over the tunnel")))
  (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
  (with-current-buffer (find-buffer-visiting file) (reins-shutdown))
  (reins-test-wait "reins to end with its client" (lambda () (not (process-live-p listener))))
  (unless (zerop (process-exit-status listener))
    (reins-test-fail "reins ended with status %s" (process-exit-status listener)))
  (reins-test-wait "the chat to say reins stopped" (lambda () (reins-test-chat-shows "■ reins stopped")))
  (reins-test-pass "reins.el connected to reins lsp --listen with the token, and shut it down"))
