"""
Reporting: what turns finished run directories into verdicts and pages. `paired` (the paired
bootstrap over dev predictions), `sequential` (group-sequential looks for seeds in rounds),
`overlap` (known overlaps of a task with an encoder's training data), the report model
(`labels`, `costs`, `cells`, `intervals`, `tables`, `report`, `answer`), its Markdown and JSON
(`render`), and the page built from the same model (`panel_data`, `figures`, `panels`,
`html_report`: HTML and PNG). Importing any of it changes nothing in AllenNLP.
"""
