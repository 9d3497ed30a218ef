"""
Reporting: what turns finished run directories into verdicts and pages. `paired` (the paired
bootstrap over dev predictions), `sequential` (group-sequential looks for seeds in rounds),
`overlap` (intervals of the paper's numbers), `report` (the report model and its Markdown /
JSON) and `html_report` (HTML and PNG). Importing any of it changes nothing in AllenNLP.
"""
