from conformance import Conventions
class Mapped:
    conventions = Conventions(dtype="float64", framework="numpy")
    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps)
adapter = Mapped()
