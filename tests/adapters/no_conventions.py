"""An adapter that forgot to declare its conventions: a load error that names the fix."""


class NoConventions:
    def positional_encoding(self, n, d_model):
        return None


adapter = NoConventions()
