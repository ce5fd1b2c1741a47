-- Buffer settings for Kera files: comments and the formatter's indentation (4 spaces).
if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1

vim.bo.commentstring = "// %s"
vim.bo.comments = "s1:/*,mb:*,ex:*/,:///,://"
vim.bo.expandtab = true
vim.bo.shiftwidth = 4
vim.bo.softtabstop = 4
vim.bo.tabstop = 4
-- Continue comments with `o`/Enter, wrap comments at 'textwidth', and join them sensibly.
vim.bo.formatoptions = vim.bo.formatoptions:gsub("t", "") .. "croqj"
vim.bo.suffixesadd = ".kera"

vim.b.undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< "
  .. "tabstop< formatoptions< suffixesadd<"
