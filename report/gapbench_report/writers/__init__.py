"""The writer kit: HTML and Markdown pieces that any command's page is made of."""
