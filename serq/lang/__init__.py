"""The language's front end: text -> lark tree -> IR, validated; formatting and warnings."""
