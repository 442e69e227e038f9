"""Text and pictures for people: units, a failure's message, the session table, the comparison
with a baseline, plots. Turns results into words; decides nothing."""
