;;; eglot-listen.el --- reins.el connects to a running `reins lsp --listen'  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-listen.el
;;
;; `reins lsp --listen 127.0.0.1:0' runs as it would at the far end of an SSH tunnel; reins.el,
;; given its port in `reins-connect' and the token file it printed in `reins-listen-token-file',
;; connects with the token, and a code action's answer shows in *reins*.  Then the same over
;; `reins lsp --listen unix:PATH', with the socket's path in `reins-connect' and no token.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-answer "It adds a and b.")
(defconst reins-test-second "Over the socket, it still adds them.")

(defun reins-test-listen (address)
  "Start `reins lsp --listen ADDRESS'; returns its process once it says where it listens."
  (let* ((said (generate-new-buffer " *reins listen stderr*"))
         (process (make-process :name "reins-listen" :buffer nil
                                :command (list (reins-test-bin "REINS_BIN") "lsp" "--listen" address)
                                :stderr said)))
    (process-put process 'said said)
    (reins-test-wait "reins to say where it listens"
                     (lambda () (with-current-buffer said
                                  (string-match-p "listening on " (buffer-string)))))
    process))

(defun reins-test-ask-and-end (file listener answer)
  "Connect eglot for FILE, run a code action until ANSWER shows in *reins*, shut down, and wait
for LISTENER to end cleanly with its one client."
  (let ((server (reins-test-connect file)))
    (unless (process-live-p listener)
      (reins-test-fail "the listening reins exited"))
    (goto-char (point-min))
    (reins-test-pick "Agent: explain this" (point-min) (point-max))
    (reins-test-wait "the answer in *reins*" (lambda () (reins-test-shows (regexp-quote answer))))
    (eglot-shutdown server))
  (reins-test-wait "reins to end with its client" (lambda () (not (process-live-p listener))))
  (unless (zerop (process-exit-status listener))
    (reins-test-fail "reins ended with status %s" (process-exit-status listener))))

(let* ((dir (reins-test-setup (vector `((text . ,reins-test-answer)) `((text . ,reins-test-second)))
                              '(("add.py" . "def add(a, b):\n    return a + b\n"))))
       (file (expand-file-name "add.py" dir))
       (listener (reins-test-listen "127.0.0.1:0"))
       (text (with-current-buffer (process-get listener 'said) (buffer-string))))
  (string-match "listening on 127\\.0\\.0\\.1:\\([0-9]+\\)" text)
  (let ((port (string-to-number (match-string 1 text)))
        (token-file (and (string-match "the token is in \\(.*\\) (send it" text) (match-string 1 text))))
    (unless token-file
      (reins-test-fail "no token file in %S" text))
    (reins-test-load-reins)
    (setq reins-connect (list "127.0.0.1" port)
          reins-listen-token-file token-file))
  (reins-test-ask-and-end file listener reins-test-answer)

  (let* ((socket (expand-file-name "run/lsp.sock" (make-temp-file "reins-socket-" t)))
         (listener (reins-test-listen (concat "unix:" socket))))
    (setq reins-connect socket
          reins-listen-token-file nil)
    (reins-test-ask-and-end file listener reins-test-second))
  (reins-test-pass "reins.el connected to reins lsp --listen with the token, and to its Unix socket"))
