# `define` and `apply` are the Trellis.Migration commands; apps that list
# :trellis_pg in `import_deps` keep them free of parentheses.
export_locals_without_parens = [define: 1, apply: 1]

[
  inputs: ["{mix,.formatter}.exs", "{config,lib,test}/**/*.{ex,exs}"],
  locals_without_parens: export_locals_without_parens,
  export: [locals_without_parens: export_locals_without_parens]
]
