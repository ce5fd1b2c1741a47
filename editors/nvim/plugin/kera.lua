-- Kera for Neovim (0.7 and newer). This file only creates the :Kera* commands; the language
-- server, tree-sitter and autocommands are set up by require("kera").setup({...}), which you
-- call from your init.lua. See docs/editors.md in the Kera repository.
if vim.g.loaded_kera then
  return
end
vim.g.loaded_kera = true

if vim.fn.has("nvim-0.7") ~= 1 then
  vim.notify("kera: Neovim 0.7 or newer is needed", vim.log.levels.WARN)
  return
end

require("kera").create_commands()
