;;; reins-language-servers.el --- the buffer's own language server, for the agent's `lsp' tool  -*- lexical-binding: t; -*-

;; Part of reins.el (load that).  reins asks the editor's server of a file (`reins/languageServer')
;; rather than start a second one; reins.el passes the request to eglot's.

(require 'cl-lib)
(require 'jsonrpc)

(defvar reins--connection)
(declare-function reins--point "reins-buffers")
(declare-function reins--utf16-length "reins-buffers")
(declare-function reins--document-buffer "reins-buffers")

(declare-function eglot-current-server "eglot")
(declare-function eglot--signal-textDocument/didChange "eglot")
(declare-function eglot--capabilities "eglot")
(declare-function eglot--server-info "eglot")

(defconst reins--language-methods
  '(("textDocument/definition" . :definitionProvider)
    ("textDocument/typeDefinition" . :typeDefinitionProvider)
    ("textDocument/implementation" . :implementationProvider)
    ("textDocument/references" . :referencesProvider)
    ("textDocument/hover" . :hoverProvider)
    ("textDocument/documentSymbol" . :documentSymbolProvider)
    ("textDocument/prepareCallHierarchy" . :callHierarchyProvider)
    ("callHierarchy/incomingCalls" . :callHierarchyProvider)
    ("callHierarchy/outgoingCalls" . :callHierarchyProvider)
    ("textDocument/prepareRename" . :renameProvider)
    ("textDocument/rename" . :renameProvider)
    ("workspace/symbol" . :workspaceSymbolProvider))
  "The methods reins passes to the editor's servers, and the capability that offers each.")

(defun reins--eglot-server (capability)
  "The eglot server of the current buffer, when it offers CAPABILITY."
  (when (and (fboundp 'eglot-current-server) (fboundp 'eglot--capabilities))
    (let ((server (eglot-current-server)))
      (and server (jsonrpc-running-p server)
           (let ((offered (plist-get (eglot--capabilities server) capability)))
             (and offered (not (eq offered :json-false))))
           server))))

(defun reins--encoded-column (position encoding)
  "The column of the UTF-16 POSITION counted in ENCODING (\"utf-8\", \"utf-32\")."
  (let* ((point (reins--point position))
         (text (buffer-substring-no-properties (save-excursion (goto-char point) (line-beginning-position)) point)))
    (pcase encoding
      ("utf-8" (length (encode-coding-string text 'utf-8)))
      ("utf-32" (length text))
      (_ (reins--utf16-length text)))))

(defun reins--language-server-answer (params)
  "Answer `reins/languageServer' PARAMS from the buffer's own server (eglot's): nil when it
has none that offers the method; its error in place of a result when it fails."
  (let* ((method (plist-get params :method))
         (capability (cdr (assoc method reins--language-methods)))
         (uri (plist-get params :uri))
         (buffers (if uri
                      (let ((buffer (reins--document-buffer uri))) (and buffer (list buffer)))
                    (cl-remove-if-not (lambda (b) (buffer-local-value 'reins--connection b)) (buffer-list)))))
    (when capability
      (cl-loop
       for buffer in buffers
       for server = (with-current-buffer buffer (reins--eglot-server capability))
       when server
       return
       (with-current-buffer buffer
         (eglot--signal-textDocument/didChange)
         (let* ((encoding (or (plist-get (eglot--capabilities server) :positionEncoding) "utf-16"))
                (lsp-params (copy-sequence (plist-get params :params)))
                (position (plist-get lsp-params :position))
                (name (or (plist-get (eglot--server-info server) :name) (jsonrpc-name server))))
           (when (and position (not (equal encoding "utf-16")))
             (setq lsp-params (plist-put lsp-params :position
                                         (list :line (plist-get position :line)
                                               :character (reins--encoded-column position encoding)))))
           (condition-case err
               (list :server name :positionEncoding encoding
                     :result (jsonrpc-request server (intern (concat ":" method)) lsp-params :timeout 25))
             (jsonrpc-error
              (list :server name :positionEncoding encoding
                    :error (list :code (or (alist-get 'jsonrpc-error-code (cdr err)) -32603)
                                 :message (or (alist-get 'jsonrpc-error-message (cdr err)) "failed")))))))))))


(provide 'reins-language-servers)
;;; reins-language-servers.el ends here
