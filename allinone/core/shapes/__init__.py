"""The typed shapes of the Agents API: its requests and resources as msgspec Structs.

They are the vocabulary both sides share: `allinone.core.api` decodes request bodies
into them and renders resources from them; the domain (`allinone.core.*`) takes them as
input and never needs the HTTP layer to do so. `showing.shown` turns stored rows into
resources totally (a field an older build wrote is repaired, never fatal).

May import: msgspec, the standard library, other shapes, and the pure defaults of
`allinone.core.agents`. Never `allinone.core.api`, storage, or anything doing I/O.
"""
