"""Pure domain rules: records, scope keys and the one filter builder, time rules, ranking."""
