-- Placeholder for the migration another branch adds as 0026; replaced by it at merge.
SELECT 1;
