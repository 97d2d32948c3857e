;;; sessions.el --- sessions in reins.el: pick one to continue, its tree, check out, fork  -*- lexical-binding: t; -*-

;; Run in batch (see scripts/test):
;;   REINS_BIN=… SCRIPTED_LLM_BIN=… emacs -Q --batch -l tests/emacs/sessions.el
;;
;; Two sessions are made in the chat (C-c C-n starts the second).  M-x reins-sessions lists both
;; and reopens the first in the chat with its conversation, which the next message continues.
;; M-x reins-tree draws it; RET on the user's second message checks out before it and gives the
;; text back to the prompt; sent edited, it makes a branch, which the tree draws with `├─' and
;; `└─' and the leaf marked.  f on the first message forks a new session, the text given back.

(load (expand-file-name "reins-test.el" (file-name-directory load-file-name)) nil t)

(defun reins-test-tree-text ()
  (with-current-buffer "*reins tree*" (buffer-substring-no-properties (point-min) (point-max))))

(defun reins-test-tree-goto (regexp)
  "Put point on the tree line matching REGEXP."
  (with-current-buffer "*reins tree*"
    (goto-char (point-min))
    (unless (re-search-forward regexp nil t)
      (reins-test-fail "the tree has no line %S:\n%s" regexp (reins-test-tree-text)))
    (beginning-of-line)))

(defun reins-test-run (text answer)
  "Send TEXT in the chat and wait for ANSWER and the run's end."
  (setq reins-test-events nil)
  (with-current-buffer (reins-test-chat-buffer) (reins-test-type-and-send text))
  (reins-test-wait (format "%S in the chat" answer) (lambda () (reins-test-chat-shows (regexp-quote answer))))
  (reins-test-wait "the run to end" (lambda () (reins-test-event "agent_end"))))

(let* ((dir (reins-test-setup
             (vector '((text . "First answer.")) '((text . "Second answer."))
                     '((text . "Third answer.")) '((text . "Fourth answer.")))
             '(("notes.txt" . "notes\n"))))
       (file (expand-file-name "notes.txt" dir)))
  (reins-test-load-reins-el)
  (find-file file)
  (reins-chat)
  (reins-test-run "First question" "First answer.")
  (let ((first (with-current-buffer (reins-test-chat-buffer) reins-chat--session)))
    (with-current-buffer (reins-test-chat-buffer) (call-interactively (key-binding (kbd "C-c C-n"))))
    (reins-test-run "Second question" "Second answer.")
    (when (reins-test-chat-shows "First") (reins-test-fail "a new session kept the old conversation"))
    ;; M-x reins-sessions: both, newest first; the first reopens with its conversation.
    (let (offered)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt choices &rest _)
                   (setq offered (mapcar #'car choices))
                   (cl-find-if (lambda (c) (string-prefix-p "First question" c)) offered))))
        (with-current-buffer (reins-test-chat-buffer) (call-interactively (key-binding (kbd "C-c C-s")))))
      (unless (and (= (length offered) 2) (string-prefix-p "Second question" (car offered)))
        (reins-test-fail "the sessions offered were %S" offered)))
    (unless (and (reins-test-chat-shows "❯ First question\n\nFirst answer\\.")
                 (not (reins-test-chat-shows "Second")))
      (reins-test-fail "the chat does not show the first session's conversation"))
    (reins-test-run "More on the first" "Third answer.")
    (unless (equal (plist-get (reins-test-event "agent_end") :sessionId) first)
      (reins-test-fail "the message did not continue the session picked"))
    ;; The tree; RET on the second user message checks out before it, its text given back.
    (with-current-buffer (reins-test-chat-buffer) (call-interactively (key-binding (kbd "C-c C-t"))))
    (reins-test-tree-goto "❯ More on the first")
    (with-current-buffer "*reins tree*" (call-interactively (key-binding (kbd "RET"))))
    (with-current-buffer (reins-test-chat-buffer)
      (unless (equal (buffer-substring-no-properties reins-chat--prompt (point-max)) "More on the first")
        (reins-test-fail "the message was not given back to the prompt: %S"
                         (buffer-substring-no-properties reins-chat--prompt (point-max))))
      (when (reins-test-chat-shows "Third answer") (reins-test-fail "the chat still shows what came after"))
      (delete-region reins-chat--prompt (point-max)))
    (reins-test-run "Another take on the first" "Fourth answer.")
    ;; The tree, shown, is drawn again when the run ends.
    (reins-test-wait "the tree to show the new branch"
                     (lambda () (string-match-p "Fourth answer" (reins-test-tree-text))))
    (let ((tree (reins-test-tree-text)))
      (dolist (line '("  ❯ First question\n  ◀ First answer.\n  ├─ ❯ More on the first\n  │  ◀ Third answer.\n  └─ ❯ Another take on the first\n* "))
        (unless (string-match-p (regexp-quote line) tree)
          (reins-test-fail "the tree does not draw the branch as %S:\n%s" line tree)))
      (unless (string-match-p "^\\*    ◀ Fourth answer\\." tree)
        (reins-test-fail "the leaf is not marked:\n%s" tree)))
    ;; f on the first message forks a session before it, the text given back.
    (reins-test-tree-goto "❯ First question")
    (with-current-buffer "*reins tree*" (call-interactively (key-binding (kbd "f"))))
    (with-current-buffer (reins-test-chat-buffer)
      (when (equal reins-chat--session first) (reins-test-fail "the fork did not switch the chat to it"))
      (unless (equal (buffer-substring-no-properties reins-chat--prompt (point-max)) "First question")
        (reins-test-fail "the fork did not give the message back")))
    (message "tree:\n%s" (reins-test-tree-text)))
  (reins-test-pass "sessions listed and resumed, the tree drew its branch, check out and fork gave the message back"))
