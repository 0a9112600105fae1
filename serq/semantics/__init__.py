"""The step semantics: the IR lowered to integer tables (`lower`), one
compiled kernel that steps rows (`kernel/`), the Python side that drives it
(`engine`), its events by name (`events`) and the words of its faults
(`words`)."""
