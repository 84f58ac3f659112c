"""python-guardrail: the component's entry point. It only adapts the contract's
types to the decision in logic.py, which holds no bindings and is tested natively.

Build: componentize-py -d ../../wit -w guardrail componentize app -o guardrail.wasm
Test:  pytest (logic.py, natively), then sandrail test (the component)
"""

import wit_world
from wit_world.imports import state
from wit_world.imports.types import (
    Event,
    Verdict,
    Verdict_Pass,
    Verdict_Violation,
    Violation,
)

import logic


class WitWorld(wit_world.WitWorld):
    def evaluate(self, event: Event) -> Verdict:
        broken = logic.evaluate(event.tool_input, event.config, state)
        if broken is None:
            return Verdict_Pass()
        return Verdict_Violation(Violation(rule=broken.rule, message=broken.message))
