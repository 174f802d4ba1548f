"""The shapes of notebooks and notes, shared by services, REST and MCP (STYLE §1).

| module | shapes |
|---|---|
| `notes` | results: notes, notebooks, revisions, batches, search and recall pages, |
| | the export records |
| `arguments` | the `*In` arguments of every use case (REST bodies and queries, tool arguments) |
| `tools` | the MCP tools' argument classes and their compact results |

Schemas import models, `notebooks.rules` and the kernel — never a selector or service.
"""
