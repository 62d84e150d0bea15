"""The HTTP edge of Core: the public API (`/v1`), the operator routes (`/core/v1`),
protocol 1.4's routes (`/api/v1`, `comms.py`), the health routes, and the error format.

Handlers parse a request, call the domain and render its result. The domain raises
`allinone.core.errors`; `errors.to_api_error` is the one mapping to the API's error body.

May import: the domain (`allinone.core.*`), its shapes (`allinone.core.shapes`),
`storage` for reads, starlette and msgspec. Nothing under `allinone/core/` imports this
package except the gateway's HTTP shell; the composition root wires it in
(`tests/test_layout.py` holds both rules).
"""
