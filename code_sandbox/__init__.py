"""Running untrusted code: a bubblewrap sandbox per call or per persistent Python kernel, one workspace per
container, every resource limited (docs/code-sandbox.md).

This package knows nothing of turns, tenants or the API: it runs a command or a cell in a container's
workspace and says what came out and which limit, if any, stopped it. Code never runs unsandboxed: where
no sandbox can be had, `availability` says what to install and nothing is run.
"""
