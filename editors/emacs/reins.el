;;; reins.el --- the reins agent in Emacs, beside your own language server  -*- lexical-binding: t; -*-

;; For Emacs 28, 29 and 30.  No package besides what Emacs ships (jsonrpc, project, flymake).
;;
;; Load this file from your init, with the `reins' binary on PATH (or `reins-command' set):
;;
;;   (load "/path/to/reins/editors/emacs/reins.el")
;;   (global-set-key (kbd "C-c r") reins-command-map)
;;
;; Why a connection of its own.  reins speaks LSP (`reins lsp'), but eglot runs one server per
;; major mode, so giving reins to eglot takes the buffer's own language server away; lsp-mode
;; runs several, but only for its users.  reins.el therefore talks LSP to `reins lsp' itself,
;; over Emacs's built-in jsonrpc.el: one reins per project root, started on first use, beside
;; whatever else runs in the buffer (eglot, lsp-mode, a Flymake checker, or nothing).  It sends
;; reins the project's open buffers as you type (didOpen/didChange), so the agent reads unsaved
;; text, and answers reins's `reins/diagnostics' from Flymake, whichever backend filled it
;; (eglot's, lsp-mode's, a checker) and from Flycheck, so the agent hears what your real
;; language server says;
;; its `lsp' tool (definitions, references, symbols…) asks eglot's server of the file
;; (`reins/languageServer') rather than start a second one.
;; (The older set-up, reins as eglot's server of some modes, is `reins-eglot.el'.)
;;
;; What you get (tested: tests/emacs/):
;; - `M-x reins-chat' (C-c r c): a chat buffer.  Type below the line, C-c C-c sends, answers
;;   stream in (text, tool calls, the todo list, failures in a line saying what to do), the next
;;   message continues the same session, C-c C-k cancels the running turn;
;; - `M-x reins-ask' (C-c r a) on a region: a question about it, as a follow-up in the chat's
;;   session; `M-x reins-code-actions' (C-c r .) offers reins's code actions there;
;; - `M-x reins-sessions' (C-c r s): pick a session of the project and continue it;
;;   `M-x reins-tree' (C-c r t): the session's entries as a tree, to continue or fork from one;
;; - review: a proposed edit opens `*reins review*', each hunk with its diff; SPC toggles a hunk
;;   between accept and reject, C-c C-c applies the chosen ones (through the buffer, so undo
;;   works), C-c C-k rejects the edit.
;;
;; The model, endpoint and keys come from your reins configuration (config.toml, REINS_MODEL,
;; OPENAI_BASE_URL, OPENAI_API_KEY, …); `reins-initialization-options' can add editor settings.

(require 'cl-lib)

(defgroup reins nil
  "The reins coding agent."
  :group 'tools)

(defcustom reins-command '("reins" "lsp")
  "How to start the reins language server."
  :type '(repeat string))

(defcustom reins-connect nil
  "Connect to a running `reins lsp --listen' instead of starting `reins-command'.
Nil: start it.  (HOST PORT): its TCP port, e.g. (\"127.0.0.1\" 9257) at the near end of an
SSH tunnel; the server's token is then sent, from `reins-listen-token', else the first line of
`reins-listen-token-file', else $REINS_LISTEN_TOKEN.  A string: the path of its Unix socket
\(`reins lsp --listen unix:PATH'), which needs no token."
  :type '(choice (const :tag "Start reins-command" nil)
                 (list :tag "TCP" string integer)
                 (string :tag "Unix socket")))

(defcustom reins-listen-token nil
  "The token of the `reins lsp --listen' that `reins-connect' names (TCP only)."
  :type '(choice (const nil) string))

(defcustom reins-listen-token-file nil
  "A file whose first line is that token: the one `reins lsp --listen' printed, or a copy."
  :type '(choice (const nil) file))

(defcustom reins-initialization-options nil
  "Editor settings sent as initializationOptions, a plist such as
\(:approval (:edit \"ask\" :bash \"ask\")).  Nil: only your reins configuration applies."
  :type 'sexp)

(defcustom reins-events-buffer-size 0
  "How many characters of the JSON-RPC traffic `*reins events*' keeps (0: none, nil: all)."
  :type '(choice (const :tag "All" nil) integer))

(defcustom reins-sync-predicate #'reins-sync-default-p
  "Whether a file buffer of a project is sent to reins (a function of no arguments, called
in the buffer)."
  :type 'function)


;;; The parts, and the keys

(let ((dir (file-name-directory (or load-file-name buffer-file-name))))
  (add-to-list 'load-path dir))
(require 'reins-connection)
(require 'reins-buffers)
(require 'reins-diagnostics)
(require 'reins-language-servers)
(require 'reins-ask)
(require 'reins-chat)
(require 'reins-review)
(require 'reins-sessions)

(defvar reins-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "c" #'reins-chat)
    (define-key map "a" #'reins-ask)
    (define-key map "." #'reins-code-actions)
    (define-key map "r" #'reins-review)
    (define-key map "s" #'reins-sessions)
    (define-key map "t" #'reins-tree)
    (define-key map "q" #'reins-shutdown)
    map)
  "reins's commands, for a prefix key of your choice: (global-set-key (kbd \"C-c r\") reins-command-map).")
(fset 'reins-command-map reins-command-map)

(provide 'reins)
;;; reins.el ends here
