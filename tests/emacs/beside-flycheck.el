;;; beside-flycheck.el --- the agent is told what Flycheck says, through reins.el  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test, which installs Debian's elpa-flycheck):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/beside-flycheck.el
;;
;; lsp-mode shows its server's diagnostics through Flycheck when Flycheck is installed, and
;; many set-ups run a Flycheck checker.  A real Flycheck checker stands in for them: an error on
;; every `TODO'.  reins.el answers `reins/diagnostics' from it too: the model's `diagnostics'
;; call reads the error, and its edit that adds a TODO is told the new one.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(unless (require 'flycheck nil t)
  (reins-test-fail "Flycheck is not installed (apt-get install elpa-flycheck)"))

(flycheck-define-generic-checker 'reins-test-todo
  "An error on every TODO."
  :start (lambda (checker callback)
           (let (found)
             (save-excursion
               (goto-char (point-min))
               (while (search-forward "TODO" nil t)
                 (push (flycheck-error-new-at (line-number-at-pos) (1+ (- (match-beginning 0) (line-beginning-position)))
                                              'error "TODO left here" :checker checker)
                       found)))
             (funcall callback 'finished found)))
  :modes '(python-mode))

(let* ((dir (reins-test-setup
             (vector `((toolCalls . ,(vector '((id . "call_1") (name . "diagnostics") (arguments . ((paths . ["calc.py"])))))))
                     `((toolCalls . ,(vector `((id . "call_2") (name . "edit")
                                               (arguments . ((path . "calc.py")
                                                             (edits . ,(vector '((oldText . "def total(xs):")
                                                                                 (newText . "def total(xs):  # TODO types"))))))))))
                     '((text . "Noted.")))
             '(("calc.py" . "def total(xs):\n    return sum(xs)  # TODO check\n"))))
       (file (expand-file-name "calc.py" dir)))
  (reins-test-load-reins-el)
  (setq reins-initialization-options '(:approval (:edit "auto")))
  (find-file file)
  (python-mode)
  (setq-local flycheck-checkers '(reins-test-todo))
  (flycheck-mode 1)
  ;; Flycheck checks again after each change, as it does on an idle timer outside batch.
  (let ((buffer (current-buffer)))
    (add-hook 'after-change-functions
              (lambda (&rest _) (run-at-time 0.05 nil (lambda () (with-current-buffer buffer (flycheck-buffer)))))
              nil t))
  (flycheck-buffer)
  (reins-test-wait "Flycheck's first error" (lambda () flycheck-current-errors))
  (reins-chat)
  (reins-test-type-and-send "What is left to do?")
  (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
  (let ((results (reins-test-tool-results)))
    (unless (string-match-p "calc\\.py:2:[0-9]+: error: TODO left here (reins-test-todo)" (car results))
      (reins-test-fail "the diagnostics tool read %S" (car results)))
    (unless (string-match-p "new problems:\ncalc\\.py:1:[0-9]+: error: TODO left here (reins-test-todo)\\'" (cadr results))
      (reins-test-fail "the edit was told %S" (cadr results))))
  (reins-test-pass "the model read Flycheck's error and was told the one its edit added"))
