"""The workbench's subcommands of ``reteco``, one module per subcommand, as the scorer's in
``reteco.commands``: ``reteco.commands.COMMANDS`` names them by module, so that a copy of
reteco without the workbench (the bundles' ``vendor/``, the starting kit) neither imports nor
offers them."""
