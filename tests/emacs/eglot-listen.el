;;; eglot-listen.el --- reins.el connects to a running `reins lsp --listen'  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/eglot-listen.el
;;
;; `reins lsp --listen 127.0.0.1:0' runs as it would at the far end of an SSH tunnel; reins.el,
;; given its port in `reins-connect' and the token file it printed in `reins-listen-token-file',
;; connects with the token, and a code action's answer shows in *reins*.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defconst reins-test-answer "It adds a and b.")

(let* ((dir (reins-test-setup (vector `((text . ,reins-test-answer)))
                              '(("add.py" . "def add(a, b):\n    return a + b\n"))))
       (file (expand-file-name "add.py" dir))
       (said (get-buffer-create " *reins listen stderr*"))
       (listener (make-process :name "reins-listen" :buffer nil
                               :command (list (reins-test-bin "REINS_BIN") "lsp" "--listen" "127.0.0.1:0")
                               :stderr said))
       port token-file)
  (reins-test-wait "reins to say where it listens"
                   (lambda () (with-current-buffer said
                                (string-match "listening on 127\\.0\\.0\\.1:\\([0-9]+\\)" (buffer-string)))))
  (with-current-buffer said
    (let ((text (buffer-string)))
      (string-match "listening on 127\\.0\\.0\\.1:\\([0-9]+\\)" text)
      (setq port (string-to-number (match-string 1 text)))
      (unless (string-match "the token is in \\(.*\\) (send it" text)
        (reins-test-fail "no token file in %S" text))
      (setq token-file (match-string 1 text))))
  (reins-test-load-reins)
  (setq reins-connect (list "127.0.0.1" port)
        reins-listen-token-file token-file)
  (let ((server (reins-test-connect file)))
    (unless (process-live-p listener)
      (reins-test-fail "the listening reins exited"))
    (goto-char (point-min))
    (reins-test-pick "Agent: explain this" (point-min) (point-max))
    (reins-test-wait "the answer in *reins*"
                     (lambda () (reins-test-shows (regexp-quote reins-test-answer))))
    (eglot-shutdown server))
  (reins-test-wait "reins to end with its client" (lambda () (not (process-live-p listener))))
  (unless (zerop (process-exit-status listener))
    (reins-test-fail "reins ended with status %s" (process-exit-status listener)))
  (reins-test-pass "reins.el connected to reins lsp --listen with the token"))
