-- *.kera files are Kera source files.
vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
  pattern = "*.kera",
  callback = function()
    vim.bo.filetype = "kera"
  end,
})
