"""The step semantics: the IR lowered to integer tables (`lower`), one
compiled kernel that steps rows (`kernel/`), the Python side that drives it
(`engine`) and the words of its events and faults (`words`)."""
