"""The Discord front end: one extension (cog) per feature area, thin glue over the domain."""
