"""(k) A model module that imports a package this environment lacks."""

import a_package_nobody_installed  # noqa: F401
from torch import nn


class NeedsMissing(nn.Module):
    pass
