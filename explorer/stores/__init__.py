"""The seen-sets: fingerprints to how a state was first reached, flat tables, exact identity."""
