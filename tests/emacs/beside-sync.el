;;; beside-sync.el --- reins beside the buffer's own language server  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/beside-sync.el
;;
;; The buffer has its own language server: eglot runs pyright (tests/langservers/install.sh) on
;; a Python file with an undefined name.  reins.el starts `reins lsp' beside it, on a connection
;; of its own, and eglot keeps pyright.  The user types a line and does not save; the model
;; reads the file and asks for the diagnostics: it reads the unsaved line (didOpen/didChange),
;; and pyright's error (Flymake's, forwarded through `reins/diagnostics').  Its `lsp' tool asks
;; eglot's pyright for a definition (`reins/languageServer') instead of starting one of its own.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defun reins-test-pyright ()
  "The path of pyright-langserver, installed by tests/langservers/install.sh when missing."
  (let ((prefix (with-temp-buffer
                  (unless (zerop (call-process "bash" nil (list t nil) nil
                                               (expand-file-name "langservers/install.sh" reins-test-root)))
                    (reins-test-fail "tests/langservers/install.sh failed"))
                  (string-trim (buffer-string)))))
    (expand-file-name "node_modules/.bin/pyright-langserver" prefix)))

(let* ((dir (reins-test-setup
             (vector `((toolCalls . ,(vector '((id . "call_1") (name . "read") (arguments . ((path . "calc.py"))))
                                             '((id . "call_4") (name . "read") (arguments . ((path . "other.py"))))
                                             '((id . "call_2") (name . "diagnostics") (arguments . ((paths . ["calc.py"]))))
                                             '((id . "call_3") (name . "lsp")
                                               (arguments . ((operation . "definition") (path . "calc.py")
                                                             (line . 6) (symbol . "total")))))))
                     '((text . "The file uses an undefined name.")))
             '(("calc.py" . "def total(xs):\n    return sum(xs) + missing_name\n\n\nprint(total([1, 2]))\n")
               ("other.py" . "x = 1\n"))))
       (file (expand-file-name "calc.py" dir))
       (pyright (reins-test-pyright))
       (asked nil))
  (reins-test-load-reins-el)
  (advice-add 'reins--language-server-answer :filter-return
              (lambda (answer) (push answer asked) answer))
  ;; The user's own set-up: eglot with pyright for Python.
  (require 'eglot)
  (add-to-list 'eglot-server-programs `((python-mode python-ts-mode) ,pyright "--stdio"))
  (find-file file)
  (python-mode)
  (apply #'eglot (eglot--guess-contact))
  (reins-test-wait "pyright to connect" (lambda () (eglot-current-server)))
  (flymake-start)
  (reins-test-wait "pyright's diagnostic in Flymake"
                   (lambda () (cl-some (lambda (d) (string-match-p "missing_name" (flymake-diagnostic-text d)))
                                       (flymake-diagnostics))))
  ;; Unsaved typing, before and after reins starts.
  (goto-char (point-min))
  (insert "# typed before reins\n")
  (reins-chat)
  (set-buffer (find-buffer-visiting file))
  (goto-char (point-max))
  (insert "# typed after, not saved\n")
  ;; A file visited once reins runs is sent too, with its unsaved text.
  (with-current-buffer (find-file-noselect (expand-file-name "other.py" dir))
    (python-mode)
    (goto-char (point-max))
    (insert "y = 2  # typed in a file opened later\n"))
  (with-current-buffer (reins-test-chat-buffer)
    (reins-test-type-and-send "What is wrong in calc.py?"))
  (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end")))
  (let ((results (reins-test-tool-results)))
    (unless (string-match-p "# typed before reins" (car results))
      (reins-test-fail "the model did not read the unsaved text: %S" (car results)))
    (unless (string-match-p "# typed after, not saved" (car results))
      (reins-test-fail "the model did not read the change: %S" (car results)))
    (unless (string-match-p "typed in a file opened later" (nth 1 results))
      (reins-test-fail "the model did not read the later file's unsaved text: %S" (nth 1 results)))
    (setq results (cons (car results) (cddr results)))
    (unless (string-match-p "calc\\.py:3:[0-9]+: error.*\"missing_name\" is not defined (Pyright)" (cadr results))
      (reins-test-fail "the model did not get pyright's diagnostic: %S" (cadr results)))
    ;; The definition comes from eglot's pyright, through reins/languageServer.
    (unless (string-match-p "calc\\.py:\n *2:5: def total" (nth 2 results))
      (reins-test-fail "the definition was %S" (nth 2 results)))
    (unless (cl-some (lambda (answer) (plist-get answer :result)) asked)
      (reins-test-fail "reins did not ask the editor's server: %S" asked)))
  ;; eglot still runs pyright for the buffer; reins is not one of eglot's servers.
  (with-current-buffer (find-buffer-visiting file)
    (let ((server (eglot-current-server)))
      (unless (and server (jsonrpc-running-p server))
        (reins-test-fail "eglot lost the buffer's own server"))
      (when (equal (plist-get (eglot--server-info server) :name) "reins")
        (reins-test-fail "reins took the place of the buffer's own server")))
    (unless (buffer-modified-p) (reins-test-fail "the buffer was saved behind the user's back")))
  (reins-test-pass "reins ran beside pyright, read unsaved typing, was told pyright's error and asked pyright for a definition"))
