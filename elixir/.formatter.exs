# The Trellis.Migration helpers; apps that list :trellis_pg in `import_deps`
# keep them free of parentheses, like Ecto's own migration commands.
export_locals_without_parens = [define: 1, define: 2, apply: 1, status: 1]

[
  inputs: [
    "{mix,.formatter}.exs",
    "{config,lib,test}/**/*.{ex,exs}",
    # The fleet soak (bench/soak) runs on this project.
    "../bench/soak/**/*.{ex,exs}"
  ],
  locals_without_parens: export_locals_without_parens,
  export: [locals_without_parens: export_locals_without_parens]
]
