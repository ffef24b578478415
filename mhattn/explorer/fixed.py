"""Controls whose range or options are fixed: the explorer's picture is made for exactly those.

Setting a new ``min``, ``max`` or ``options`` on one raises :class:`traitlets.TraitError`
(once the explorer has set ``_fixed``), with a message naming the control.
"""

from ..checks.optional import require

widgets = require("ipywidgets")
traitlets = require("traitlets")


def refuse_if_fixed(control, proposal):
    name = proposal["trait"].name
    if control._fixed:
        raise traitlets.TraitError(
            f"the explorer's {control._name} control has a fixed {name}, {getattr(control, name)!r}: the picture "
            f"is made for exactly that range; got {proposal['value']!r}")


class _FixedBounds:
    """Mixin for a bounded int control: ``min`` and ``max`` cannot change once ``_fixed`` is True."""

    _fixed, _name = False, "?"

    @traitlets.validate("min")
    def _validate_min(self, proposal):
        refuse_if_fixed(self, proposal)
        return super()._validate_min(proposal)

    @traitlets.validate("max")
    def _validate_max(self, proposal):
        refuse_if_fixed(self, proposal)
        return super()._validate_max(proposal)


class _FixedOptions:
    """Mixin for a selection control: ``options`` cannot change once ``_fixed`` is True."""

    _fixed, _name = False, "?"

    @traitlets.validate("options")
    def _validate_options(self, proposal):
        refuse_if_fixed(self, proposal)
        return super()._validate_options(proposal)


class IntSlider(_FixedBounds, widgets.IntSlider):
    pass


class BoundedIntText(_FixedBounds, widgets.BoundedIntText):
    pass


class Dropdown(_FixedOptions, widgets.Dropdown):
    pass


class ToggleButtons(_FixedOptions, widgets.ToggleButtons):
    pass


def toggle(options, value, width, tooltips=()):
    return ToggleButtons(options=options, value=value, style={"button_width": width}, tooltips=tooltips,
                          layout=widgets.Layout(width="auto"))
